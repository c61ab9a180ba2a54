-- The credentials clock: one row whose generation moves in the transaction of every change that can
-- end or narrow what a presented API key resolves to, or who receives events (the changes that
-- notify engram_credentials and engram_event_subscriptions, migrations 0015 and 0020). A process
-- that holds a key (or an organization's subscriptions) in memory remembers the generation it read
-- it at, and a hot route's own statement checks that the generation has not moved instead of the
-- process waiting for its listening connection to catch up (core/credentials-clock.ts).
-- The bump is a deferred constraint trigger: it runs at COMMIT, once per transaction (the local
-- setting), so the row is locked only while committing, after every other lock its transaction
-- takes, and two credential changes never deadlock over it.
CREATE TABLE credentials_clock (generation BIGINT NOT NULL);
INSERT INTO credentials_clock (generation) VALUES (0);

CREATE FUNCTION engram_credentials_clock_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('engram.credentials_clock_moved', true) IS DISTINCT FROM 'yes' THEN
    UPDATE credentials_clock SET generation = generation + 1;
    PERFORM set_config('engram.credentials_clock_moved', 'yes', true);
  END IF;
  RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER api_keys_clock
  AFTER INSERT OR DELETE OR UPDATE OF id, organization_id, project_id, prefix, key_hash, scopes, tenant_id, end_user_id, expires_at, revoked_at
  ON api_keys DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION engram_credentials_clock_moved();
CREATE CONSTRAINT TRIGGER projects_clock
  AFTER INSERT OR DELETE OR UPDATE OF id, organization_id, deleted_at
  ON projects DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION engram_credentials_clock_moved();
CREATE CONSTRAINT TRIGGER organizations_clock
  AFTER DELETE OR UPDATE OF id
  ON organizations DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION engram_credentials_clock_moved();
CREATE CONSTRAINT TRIGGER event_subscriptions_clock
  AFTER INSERT OR UPDATE OR DELETE
  ON event_subscriptions DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION engram_credentials_clock_moved();
-- TRUNCATE has no row triggers (nor deferred ones); it locks the whole table anyway.
CREATE FUNCTION engram_credentials_clock_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE credentials_clock SET generation = generation + 1; RETURN NULL; END;
$$;
CREATE TRIGGER api_keys_clock_truncated AFTER TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_clock_truncated();
CREATE TRIGGER projects_clock_truncated AFTER TRUNCATE ON projects FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_clock_truncated();
CREATE TRIGGER organizations_clock_truncated AFTER TRUNCATE ON organizations FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_clock_truncated();
CREATE TRIGGER event_subscriptions_clock_truncated AFTER TRUNCATE ON event_subscriptions FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_clock_truncated();
