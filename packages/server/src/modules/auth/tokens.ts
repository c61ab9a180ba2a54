import { jwtVerify, SignJWT } from 'jose';
import { deriveKey } from '../../core/crypto.js';

const ISSUER = 'engram';
const AUDIENCE = 'engram';

export interface AccessClaims {
  userId: number;
  sessionId: number;
}

/**
 * Short-lived HS256 access tokens. A token only names its user and session: the session row
 * decides on every request whether it still counts, so revocation takes effect at once.
 */
export class TokenIssuer {
  private readonly key: Uint8Array;
  constructor(
    masterSecret: Uint8Array,
    readonly ttlSeconds: number,
  ) {
    this.key = deriveKey(masterSecret, 'access-token');
  }

  issue(userId: number, sessionId: number): Promise<string> {
    return new SignJWT({ sid: sessionId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(String(userId))
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.key);
  }

  async verify(token: string): Promise<AccessClaims | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        audience: AUDIENCE,
      });
      const userId = Number(payload.sub);
      const sessionId = payload.sid;
      if (!Number.isSafeInteger(userId) || typeof sessionId !== 'number' || !Number.isSafeInteger(sessionId))
        return undefined;
      return { userId, sessionId };
    } catch {
      return undefined;
    }
  }
}
