import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { CONSENT_RETURN_PATH, OAuthReturn, returnConsent } from './oauth-return.js';
import './styles.css';

const root = createRoot(document.getElementById('root')!);
root.render(window.location.pathname === CONSENT_RETURN_PATH ? <OAuthReturn answer={returnConsent()} /> : <App />);
