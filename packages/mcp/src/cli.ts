import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ServiceClient } from '@engram/client';
import { startMcpHttpServer } from './http.js';
import { createEngramMcpServer } from './tools.js';

const USAGE = `engram-mcp: the Engram memory service as an MCP server

  engram-mcp                        stdio (for Claude Desktop/Code, Cursor, VS Code)
  engram-mcp --http [--port 8765] [--host 127.0.0.1]
                                    streamable HTTP (stateless) at POST /mcp; each request brings its own
                                    key (X-API-Key or Authorization: Bearer) and scope headers
                                    (the Engram server serves the same at its own POST /mcp)

Environment: ENGRAM_URL (default http://127.0.0.1:8080); for stdio ENGRAM_API_KEY (required),
ENGRAM_PROJECT_ID (not needed with a project-locked key), ENGRAM_END_USER_ID, ENGRAM_TENANT_ID.`;

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) return void process.stdout.write(`${USAGE}\n`);
  const baseUrl = env.ENGRAM_URL ?? 'http://127.0.0.1:8080';
  const option = (name: string) => {
    const at = argv.indexOf(name);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  if (argv.includes('--http')) {
    const { url } = await startMcpHttpServer({
      baseUrl,
      port: Number(option('--port') ?? 8765),
      host: option('--host') ?? '127.0.0.1',
    });
    // Stderr: stdout stays free, as for stdio.
    process.stderr.write(`engram-mcp: listening on ${url}\n`);
    return;
  }
  const apiKey = env.ENGRAM_API_KEY;
  if (!apiKey) {
    process.stderr.write(`engram-mcp: ENGRAM_API_KEY is not set\n\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const scope = {
    projectId: env.ENGRAM_PROJECT_ID || undefined,
    endUserId: env.ENGRAM_END_USER_ID || undefined,
    tenantId: env.ENGRAM_TENANT_ID || undefined,
  };
  const client = new ServiceClient({ baseUrl, apiKey, ...scope });
  const server = createEngramMcpServer({ client, tenantId: scope.tenantId, endUserId: scope.endUserId });
  await server.connect(new StdioServerTransport());
}
