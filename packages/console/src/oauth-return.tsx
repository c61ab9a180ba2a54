/**
 * The page a provider sends the consent window back to (`ENGRAM_OAUTH_REDIRECT_URL`, by default the
 * server's /connectors/oauth/callback, which serves the console). It holds no session: it hands the code
 * and state to the console tab that asked for consent, over a channel only this origin can hear, and
 * takes them out of its own address so they stay in no history entry.
 */
export const CONSENT_CHANNEL = 'engram-connector-consent';
export const CONSENT_RETURN_PATH = '/connectors/oauth/callback';

export interface ConsentAnswer {
  state: string;
  code: string | null;
  error: string | null;
}

/** Hands this address's consent answer to the console tab waiting for it; undefined when it carries none. */
export function returnConsent(): ConsentAnswer | undefined {
  const query = new URLSearchParams(window.location.search);
  window.history.replaceState(null, '', window.location.pathname);
  const state = query.get('state');
  if (!state) return undefined;
  const answer: ConsentAnswer = { state, code: query.get('code'), error: query.get('error') };
  const channel = new BroadcastChannel(CONSENT_CHANNEL);
  channel.postMessage(answer);
  channel.close();
  // Closes the window when the console opened it; a tab the person opened stays, with the message.
  setTimeout(() => window.close(), 300);
  return answer;
}

export function OAuthReturn({ answer }: { answer: ConsentAnswer | undefined }) {
  if (!answer) {
    return (
      <main className="signin">
        <h1>Engram console</h1>
        <p role="alert" className="error">
          This address carries no consent answer.
        </p>
      </main>
    );
  }
  return (
    <main className="signin">
      <h1>Engram console</h1>
      <p role="status">
        {answer.code ? 'Consent received.' : `The provider answered: ${answer.error ?? 'no consent'}.`} Return to the
        console tab that asked for it; this window can be closed.
      </p>
    </main>
  );
}
