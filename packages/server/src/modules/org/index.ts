/** The org module's public face: organizations, members, projects and API keys. */
export {
  addMembership, bootstrap, createApiKey, createOrganization, createProject, createUser, lastUseDue, memberUserIds, membershipOf,
  findProject, organizationExists, projectIdsOf, resolveApiKey, touchApiKey, userCredentials,
  type BootstrapResult,
} from './service.js';
