-- Every change that can end or narrow what a presented API key resolves to (a key revoked, changed or
-- deleted; a project created, deleted or moved; an organization deleted) notifies the
-- engram_credentials channel in its own transaction, so the notification arrives with the commit,
-- whichever process or session made it. Each process keeps resolved keys in memory only while it
-- listens on that channel and forgets them all on a notification (modules/org/resolved-keys.ts).
-- last_used_at, written as keys are used, is left out: it changes nothing a key resolves to.
CREATE FUNCTION engram_credentials_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('engram_credentials', '');
  RETURN NULL;
END;
$$;
CREATE TRIGGER api_keys_changed
  AFTER INSERT OR DELETE OR UPDATE OF id, organization_id, project_id, prefix, key_hash, scopes, tenant_id, end_user_id, expires_at, revoked_at
  ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_changed();
CREATE TRIGGER api_keys_truncated AFTER TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_changed();
CREATE TRIGGER projects_changed
  AFTER INSERT OR DELETE OR UPDATE OF id, organization_id, deleted_at
  ON projects FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_changed();
CREATE TRIGGER projects_truncated AFTER TRUNCATE ON projects FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_changed();
CREATE TRIGGER organizations_changed
  AFTER DELETE OR UPDATE OF id ON organizations FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_changed();
CREATE TRIGGER organizations_truncated AFTER TRUNCATE ON organizations FOR EACH STATEMENT EXECUTE FUNCTION engram_credentials_changed();
