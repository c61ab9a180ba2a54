import type { Transporter } from 'nodemailer';

/**
 * Outgoing mail (invitations, password-reset links) through the SMTP server of ENGRAM_SMTP_URL.
 * Without it nothing is mailed and the links are only answered to whoever asked for them.
 */
export interface Mailer {
  /** Sends a plain-text message; false when the server refused it or could not be reached. */
  send(message: { to: string; subject: string; text: string }): Promise<boolean>;
}

export function createMailer(settings: { url?: string; from: string }): Mailer | null {
  if (!settings.url) return null;
  const url = settings.url;
  // nodemailer is loaded at the first message: most processes never send one.
  let transport: Transporter | undefined;
  return {
    send: async ({ to, subject, text }) => {
      try {
        transport ??= (await import('nodemailer')).createTransport(url);
        await transport.sendMail({ from: settings.from, to, subject, text });
        return true;
      } catch {
        return false;
      }
    },
  };
}
