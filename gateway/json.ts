/** A JSON value as the OpenAPI document (gateway/openapi.ts assembles it from the declarations of gateway/contract/) holds it. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
