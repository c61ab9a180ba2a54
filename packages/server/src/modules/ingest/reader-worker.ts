import { threadError } from '../../core/worker-threads.js';
import { readDocumentHere } from './document.js';
import { detectType, tooLarge } from './parsers/index.js';
import type { ReadAnswer, ReadCall } from './reader.js';

/**
 * A reading process (reader.ts): reads one document at a time, within the limits it is sent, and
 * answers with the document or the error. Its heap is bounded by --max-old-space-size.
 */
const send = (message: ReadAnswer | 'ready') => process.send!(message);
// The server gone (its IPC channel closed), nothing is left to read for.
process.on('disconnect', () => process.exit(0));

async function answer(call: ReadCall): Promise<unknown> {
  const bytes = Buffer.from(call.bytes.buffer, call.bytes.byteOffset, call.bytes.byteLength);
  if (call.op === 'detect') return detectType(bytes, call.name, call.mediaType);
  try {
    return await readDocumentHere(bytes, call.name, call.mediaType, call.limits);
  } catch (error) {
    // A parser recursing once per level of nesting (HTML, JSON, XML inside a DOCX) runs out of stack.
    if (error instanceof RangeError && /call stack/i.test(error.message))
      throw tooLarge('ENGRAM_PARSE_MAX_PARTS', 'The file nests its parts too deeply to read');
    throw error;
  }
}

process.on('message', (call: ReadCall) => {
  void answer(call).then(
    (result) => send({ id: call.id, result }),
    (error: unknown) => send({ id: call.id, error: threadError(error) }),
  );
});
send('ready');
