/** The people module's public face: invitations, members, passwords, and the operator's `engram user` commands. */
export { createUserAsOperator, resetPasswordAsOperator, type PeopleDeps } from './service.js';
export { checkPassword, PASSWORD_MIN_LENGTH } from './password-rules.js';
