export { createEngramMcpServer, toolError, VERSION, type EngramMcpOptions } from './tools.js';
export { handleMcpRequest, startMcpHttpServer, apiKeyOf, type McpHttpSettings } from './http.js';
