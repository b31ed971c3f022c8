/** The validators of a route without path parameters or without query parameters. */
import { NoParameters } from '../contract-schema';
import { validator } from '../validate';

/** No path parameters. */
export const noPath = validator(NoParameters, 'path');

/** No query parameters: any given is `unknown_field`. */
export const noQuery = validator(NoParameters, 'query');
