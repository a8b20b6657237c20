import { truncate } from './truncate.js';

export const PREVIEW_LENGTH = 30;

/** The one-line preview of a message on the lock screen. */
export function preview(sender, message) {
  return `${sender}: ${truncate(message.replace(/\s+/g, ' ').trim(), PREVIEW_LENGTH)}`;
}
