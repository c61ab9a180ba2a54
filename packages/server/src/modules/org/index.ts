/** The org module's public face: organizations, members, projects and API keys. */
export {
  addMembership, bootstrap, createApiKey, createOrganization, createProject, createUser, lastUseDue, memberUserIds, membershipOf,
  findProject, organizationExists, projectIdsOf, resolveApiKey, touchApiKey, userCredentials,
  findMember, findUser, listUsers, lockMemberships, members, ownerCount, projectOrganization, removeMembership, revokeApiKey, setMemberRole, setPassword,
  type BootstrapResult, type Member, type UserRecord,
} from './service.js';
export { createKeyAsOperator, revokeKeyAsOperator } from './api-keys.js';
export { credentialsChanged, forgetKey, resolveKey } from './resolved-keys.js';
