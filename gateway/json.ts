/** A JSON value as the OpenAPI document (openapi.ts, openapi-sandbox.ts) holds it. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
