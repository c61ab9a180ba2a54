import { describe, expect, it } from 'vitest';
import { conflicting, factsOf } from '../../testing/fact-reading.js';

/** The names of Object.prototype's members, which a plain object literal used as a word table hands back. */
const OBJECT_WORDS = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__', 'isPrototypeOf'];

describe("words that name Object's members", () => {
  it('are read as words, never as the tables’ inherited functions', () => {
    for (const word of OBJECT_WORDS) {
      for (const text of [
        `I'm a ${word} fan.`,
        `My favourite word is ${word}.`,
        `I live in ${word} now.`,
        `I've been doing ${word} every morning since ${word}.`,
        `We're ${word} and happy about it, lol idk ${word}`,
      ]) {
        const facts = factsOf(text);
        expect(facts.join(' '), text).not.toMatch(/function|\[object|native code/i);
      }
      expect(conflicting(`I'm a ${word} fan.`, `I'm not a ${word} fan anymore.`), word).toBeTypeOf('boolean');
    }
  });
});
