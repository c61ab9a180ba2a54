-- The credentials clock (PostgreSQL's 0021 says what it is for): its generation moves with every
-- change to what an API key resolves to or who receives events. SQLite holds nothing in memory
-- (every request reads its key in process), so nothing decides by it here; the triggers keep it
-- true all the same, so that the same statements read the same clock on both dialects.
CREATE TABLE credentials_clock (generation INTEGER NOT NULL);
INSERT INTO credentials_clock (generation) VALUES (0);

CREATE TRIGGER api_keys_clock_inserted AFTER INSERT ON api_keys BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER api_keys_clock_deleted AFTER DELETE ON api_keys BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER api_keys_clock_updated
  AFTER UPDATE OF id, organization_id, project_id, prefix, key_hash, scopes, tenant_id, end_user_id, expires_at, revoked_at ON api_keys
  BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER projects_clock_inserted AFTER INSERT ON projects BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER projects_clock_deleted AFTER DELETE ON projects BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER projects_clock_updated AFTER UPDATE OF id, organization_id, deleted_at ON projects
  BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER organizations_clock_deleted AFTER DELETE ON organizations BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER organizations_clock_updated AFTER UPDATE OF id ON organizations BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER event_subscriptions_clock_inserted AFTER INSERT ON event_subscriptions BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER event_subscriptions_clock_deleted AFTER DELETE ON event_subscriptions BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
CREATE TRIGGER event_subscriptions_clock_updated AFTER UPDATE ON event_subscriptions BEGIN UPDATE credentials_clock SET generation = generation + 1; END;
