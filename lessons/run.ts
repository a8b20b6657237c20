// npm run lesson -- <p0|p1|p2|p3|p4>: replays the lesson's scripted stories in a temporary copy of
// a small project, with --trace on, and ends with the lesson's acceptance verdict.

import { tracePrinter } from '../agent.ts';
import { type Lesson, playStory, STORIES } from './stories.ts';

const LESSONS: Lesson[] = ['p0', 'p1', 'p2', 'p3', 'p4'];

export async function runLesson(lesson: string, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  if (!LESSONS.includes(lesson as Lesson)) {
    out.write(`usage: npm run lesson -- <${LESSONS.join('|')}>\n`);
    return 2;
  }
  let failed = 0;
  for (const story of STORIES.filter((s) => s.lesson === lesson)) {
    out.write(`\n=== ${lesson}: ${story.name}\n\n`);
    const problem = await playStory(story, tracePrinter(out));
    out.write(
      problem === null ? `\nverdict: PASS, the acceptance of ${lesson} holds\n` : `\nverdict: FAIL, ${problem}\n`,
    );
    if (problem !== null) failed++;
  }
  return failed === 0 ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  void runLesson(process.argv[2] ?? '').then((code) => {
    process.exitCode = code;
  });
}
