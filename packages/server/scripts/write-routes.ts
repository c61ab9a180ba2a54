// `npm run openapi` (after write-openapi.ts): writes docs/routes.md from openapi.json and the route files.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { routesTable } from './routes-table.js';

const openapi = JSON.parse(readFileSync(fileURLToPath(new URL('../openapi.json', import.meta.url)), 'utf8'));
const target = fileURLToPath(new URL('../../../docs/routes.md', import.meta.url));
writeFileSync(target, routesTable(openapi, fileURLToPath(new URL('../src', import.meta.url))));
process.stdout.write(`wrote ${target}\n`);
