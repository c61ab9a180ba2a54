/** The org module's public face: organizations, members, projects and API keys. */
export {
  addMembership, bootstrap, createApiKey, createOrganization, createProject, createUser, findProject, lastUseDue, memberUserIds, membershipOf,
  organizationExists, projectIdsOf, resolveApiKey, touchApiKey, userCredentials,
  type BootstrapResult,
} from './service.js';
