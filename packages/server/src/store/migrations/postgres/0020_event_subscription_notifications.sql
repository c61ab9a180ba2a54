-- Every change to event_subscriptions notifies the engram_event_subscriptions channel in its own
-- transaction, so the notification arrives with the commit, whichever process or session made it.
-- Each process keeps the subscriptions it read in memory only while it listens on that channel, and
-- forgets them all on a notification (core/event-subscriptions.ts): a write then builds no event
-- that nobody receives. engram_notify() notifies the channel its trigger names, for any table.
CREATE FUNCTION engram_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_notify(TG_ARGV[0], ''); RETURN NULL; END;
$$;
CREATE TRIGGER event_subscriptions_changed
  AFTER INSERT OR UPDATE OR DELETE ON event_subscriptions FOR EACH STATEMENT EXECUTE FUNCTION engram_notify('engram_event_subscriptions');
CREATE TRIGGER event_subscriptions_truncated
  AFTER TRUNCATE ON event_subscriptions FOR EACH STATEMENT EXECUTE FUNCTION engram_notify('engram_event_subscriptions');
