export { createEngramMcpServer, toolError, CURRENT_FACTS_URI, VERSION, type EngramMcpOptions } from './tools.js';
export { answerMcp, startMcpHttpServer, apiKeyOf, type McpCaller, type McpHttpSettings } from './http.js';
