// Defends against: a pasted image (an editor's screenshot) breaking its session. Its base64 bytes
// would count as text (a 1 MB screenshot as ~300,000 tokens: "would not fit the window", or a
// summary at once) and the huge-message cap would cut them into bytes the API refuses. The API
// scales an image to at most about 1,600 tokens, so that is what one counts; it is never cut.
// Tests: test/loop/endurance.test.ts ("a pasted screenshot of 1 MB", "… in the part a summary
// covers").

/** What the API charges at most for one image, in tokens, whatever its size in bytes. */
const IMAGE_TOKENS = 1_600;
/** An image as the estimate measures it: characters of text that cost as much (3.5 a token). */
const IMAGE_STAND_IN = '.'.repeat(IMAGE_TOKENS * 3.5);

export const isImage = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && 'type' in value && value.type === 'image';

/** JSON.stringify(value)'s length, with each image block counted as the tokens it costs. */
export const measuredLength = (value: unknown): number =>
  JSON.stringify(value, (_key, inner: unknown) => (isImage(inner) ? IMAGE_STAND_IN : inner)).length;
