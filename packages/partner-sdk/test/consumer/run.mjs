/** A partner's ES module program against the installed package (test/install.test.ts). */
import * as sdk from '@partner-sync/partner-sdk';
import { exercise } from './exercise.mjs';

console.log(await exercise(sdk, 'esm'));
