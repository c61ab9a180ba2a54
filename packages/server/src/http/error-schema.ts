import { Type, type TSchema } from '@sinclair/typebox';

/** The one error body (docs/api.md), for documenting a route's error answers in OpenAPI. */
export const ErrorResponse = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      field: Type.Optional(Type.String({ description: 'The offending field, as a path' })),
      request_id: Type.String(),
    }),
  },
  { $id: 'ErrorResponse' },
);

/** Error answers a route documents, by status, each with what it means there. */
export function errorResponses(statuses: Record<number, string>): Record<number, TSchema> {
  return Object.fromEntries(Object.entries(statuses).map(([status, description]) => [status, { ...ErrorResponse, description }]));
}
