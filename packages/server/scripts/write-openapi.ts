// `npm run openapi`: writes openapi.json, the document the server serves at /openapi.json, from which
// both clients are typed and checked. src/http/openapi.test.ts fails when the committed file differs.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { servedOpenApiDocument } from '../src/http/openapi-document.js';

const target = fileURLToPath(new URL('../openapi.json', import.meta.url));
const document = await servedOpenApiDocument();
writeFileSync(target, JSON.stringify(document, null, 2) + '\n');
process.stdout.write(`wrote ${target}\n`);
