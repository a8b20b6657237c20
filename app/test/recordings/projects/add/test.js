import assert from 'node:assert/strict';
import { add } from './add.js';

assert.equal(add(2, 3), 5);
console.log('ok: add(2, 3) === 5');
