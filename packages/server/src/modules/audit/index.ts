/** The audit module's public face: reading and verifying the log that core/audit-log.ts appends to. */
export { auditEvents, verifyAuditChains, type ChainReport } from './service.js';
