/** The server's version: in the usage text, `engram --version` and the OpenAPI document. */
export const VERSION = '0.1.0';
