// The session page (session-page/), offline and without a browser: sessions recorded by the real harness on a
// scripted model are exported, and the HTML is checked as text. Each test is named after the failure it
// prevents. What only a browser can tell (nothing runs, the tooltip shows) is in test/browser.check.ts.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SESSION_VERSION } from '../app/session-file.ts';
import { call, say, ScriptedModel } from '../scripted-model.ts';
import { cli, defaultOut, exportSession } from '../app/session-page/export.ts';
import { escapeHtml, html } from '../app/session-page/html.ts';
import { renderMarkdown } from '../app/session-page/markdown.ts';
import { exportP4 } from '../app/session-page/p4-example.ts';
import { PAGE_MAX_BYTES } from '../app/session-page/page.ts';
import { linkProblem } from '../app/session-page/read.ts';
import { longSession } from './bench/session-page.ts';
import { HOSTILE, hostileSession, recordSession, richSession, tempDir } from './session-page-fixtures.ts';

async function exported(file: string): Promise<{ page: string; warnings: string[]; out: string }> {
  const { out, warnings } = await exportSession(file);
  return { page: readFileSync(out, 'utf8'), warnings, out };
}

/** A bar of the chart: the link to its request, and its numbers. */
const BAR_LINK = /<a\s+class="bar[^"]*"\s+href="#(r-\d+)"[^>]*?data-tip="([^"]*)"/g;
const count = (page: string, pattern: RegExp) => [...page.matchAll(pattern)].length;
const sessionLines = (file: string) => readFileSync(file, 'utf8').trim().split('\n');
const entriesOf = (file: string, type: string) =>
  sessionLines(file)
    .map((line) => JSON.parse(line) as { type: string })
    .filter((entry) => entry.type === type).length;

// =============================================================================================
// 1. Escaping: session text is shown, never run

describe('escaping', () => {
  test('session text cannot become markup: the five HTML characters are escaped, in text and in attributes', () => {
    assert.equal(
      escapeHtml(`<a href="x" title='y'>&</a>`),
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
    const made = html`<p title="${HOSTILE.fileName}">${HOSTILE.img}</p>`.markup;
    assert.equal(made, '<p title="a&quot;b&lt;c&gt;&#39;d">&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</p>');
  });

  test('a reply cannot inject markup through Markdown: only our tags come out, around escaped text', () => {
    const markup = renderMarkdown(
      `Fixed **add.js**:\n\n- \`a + b\`\n- tests pass\n\n**${HOSTILE.img}** \`${HOSTILE.script}\``,
    ).markup;
    const tight = markup.replace(/>\s+</g, '><');
    assert.ok(tight.startsWith('<p>Fixed <strong>add.js</strong>:</p><ul><li><code>a + b</code></li><li>tests pass'));
    assert.ok(markup.includes('<strong>&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</strong>'));
    assert.ok(markup.includes('<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>'));
    assert.equal(count(markup, /<(script|img)/g), 0);
  });

  test('a hostile session (task, file name, tool result, reply) shows its text literally and adds no tag', async (t) => {
    const file = await hostileSession(t);
    const { page, out } = await exported(file);
    assert.equal(out, file.replace(/\.jsonl$/, '.html'), 'the page goes beside the session');
    assert.equal(count(page, /<script/g), 1, 'only the page’s own script');
    assert.equal(count(page, /<img/gi), 0);
    assert.equal(count(page, /<style/g), 1, 'only the page’s own stylesheet');
    assert.ok(page.includes(escapeHtml(HOSTILE.script)) && page.includes(escapeHtml(HOSTILE.img)));
    assert.ok(page.includes(`<title>Session ${escapeHtml(HOSTILE.fileName)}.jsonl`));
    assert.ok(!page.includes(HOSTILE.fileName), 'the quotes and brackets of the file name appear only escaped');
  });

  test('no resource is ever fetched: every src and href in the page is a link inside it', async (t) => {
    const file = await recordSession(t, {
      files: { 'links.md': 'see https://example.com/x.js and http://127.0.0.1/\n' },
      script: [call('read_file', { path: 'links.md' }), say('Links: https://example.com and [x](http://evil.test/).')],
      tasks: ['what links are in links.md? https://example.com'],
    });
    const { page } = await exported(file);
    const targets = [...page.matchAll(/\b(?:src|href|action|xlink:href)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)/gi)].map((m) =>
      m[1]!.replace(/^["']|["']$/g, ''),
    );
    assert.ok(targets.length > 0);
    assert.deepEqual(
      targets.filter((target) => !target.startsWith('#')),
      [],
    );
    assert.doesNotMatch(page, /\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?\/\//i);
  });

  test('the page’s own script and stylesheet run only because the policy names their exact hashes', async (t) => {
    const file = await recordSession(t, { script: [say('Hello.')], tasks: ['hi'] });
    const { page } = await exported(file);
    const policy = /<meta http-equiv="Content-Security-Policy" content="([^"]*)"/
      .exec(page)?.[1]
      ?.replaceAll('&#39;', "'");
    assert.ok(policy, 'a Content-Security-Policy meta tag');
    assert.match(policy, /default-src 'none'/);
    for (const [tag, directive] of [
      ['script', 'script-src'],
      ['style', 'style-src'],
    ]) {
      const body = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(page)![1]!;
      const hash = createHash('sha256').update(body).digest('base64');
      assert.match(policy, new RegExp(`${directive} 'sha256-${hash.replace(/[+/]/g, '\\$&')}'(;|$)`));
    }
    assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|https?:/);
  });
});

// =============================================================================================
// 2. What the page shows

describe('the transcript', () => {
  test('every message has its own anchor, and each task in the header links to its first message', async (t) => {
    const file = await richSession(t);
    const { page } = await exported(file);
    const messages = entriesOf(file, 'message');
    for (let i = 0; i < messages; i++) assert.equal(count(page, new RegExp(`id="m-${i}"`, 'g')), 1, `#m-${i}`);
    assert.equal(count(page, /id="m-\d+"/g), messages);
    const tasks = /<ol class="tasks">([\s\S]*?)<\/ol>/.exec(page)![1]!;
    assert.match(tasks, /href="#m-0">Make done\.txt\.<\/a>[\s\S]*exit code 0/);
    assert.match(tasks, /href="#m-\d+">And a second task\.<\/a>[\s\S]*accepted \(verified by `test -f done\.txt`\)/);
  });

  test('steering, "skipped", "not executed", refusals and the gate’s "not done" are each shown as what they are', async (t) => {
    const { page } = await exported(await richSession(t));
    assert.match(page, /<span class="label">steering<\/span>[\s\S]*?please also keep the README short/);
    assert.match(page, /<div class="result not-run">[\s\S]*?<span class="label">skipped<\/span>/);
    assert.match(page, /why: the user sent a message; read it before going on/);
    assert.match(page, /<span class="label">not executed<\/span>[\s\S]*?why: your reply was cut off at max_tokens/);
    assert.match(page, /<div class="result error">[\s\S]*?<span class="label">error<\/span>/);
    assert.match(page, /<span class="label">not done<\/span> The task is not done yet: the check `test -f done\.txt`/);
    assert.match(page, /<section class="msg user gate"/);
  });

  test('one bar per request, each linking to the request’s place in the transcript, with its numbers', async (t) => {
    const file = await richSession(t, 'claude-sonnet-4-5');
    const { page } = await exported(file);
    const bars = [...page.matchAll(BAR_LINK)];
    assert.equal(bars.length, entriesOf(file, 'usage') + entriesOf(file, 'compaction'));
    for (const [, target, tip] of bars) {
      assert.equal(count(page, new RegExp(`id="${target}"`, 'g')), 1, `the bar's target ${target} exists once`);
      assert.match(
        tip!,
        /input [\d,]+: uncached [\d,]+, cache write [\d,]+, cache read [\d,]+\noutput [\d,]+\ncost \$/,
      );
    }
    assert.match(bars.at(-1)![2]!, /\$[\d.]+ so far/, 'a priced model shows the running cost');
  });

  test('an unpriced model’s cost is shown as unknown, never as zero', async (t) => {
    const { page } = await exported(await richSession(t, 'scripted'));
    assert.match(page, /cost unknown: no price for scripted/);
    assert.doesNotMatch(page, /\$0\.0000/);
  });
});

// =============================================================================================
// 3. The P4 story: 40+ calls, a compaction, a sub-agent

describe('the P4 story’s page', () => {
  let page = '';
  let session = '';
  let dir = '';
  before(async () => {
    dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'session-page-p4-')));
    ({ session } = await exportP4(dir));
    page = readFileSync(defaultOut(session), 'utf8');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('a compaction shows its summary, folds and marks the part it replaced, and marks where the verbatim part starts', () => {
    const compaction = JSON.parse(sessionLines(session).find((line) => line.includes('"type":"compaction"'))!) as {
      keptFrom: number;
      summary: string;
    };
    assert.match(page, /<section class="compaction" id="k-1">/);
    assert.ok(page.includes(escapeHtml(compaction.summary.split('\n')[0]!)));
    assert.match(
      page,
      new RegExp(`<details class="replaced">\\s*<summary>\\s*Messages #0–#${compaction.keptFrom - 1}:`),
    );
    const cut = page.indexOf('id="cut-1"');
    assert.ok(cut > 0 && cut < page.indexOf(`id="m-${compaction.keptFrom}"`), 'the cut comes right before its message');
    assert.ok(cut > page.lastIndexOf(`id="m-${compaction.keptFrom - 1}"`));
  });

  test('a sub-agent’s session is nested under the task call that started it, with its own anchors and bars', () => {
    const task = page.indexOf('<div class="call" data-tool="task"');
    const nested = page.indexOf('<details class="subagent" id="task-1-session">');
    assert.ok(task > 0 && nested > task, 'the sub-agent comes inside the task call');
    assert.ok(nested < page.indexOf('id="m-2"'), 'and before the call’s result');
    assert.match(page, /id="task-1-m-1"[\s\S]*?data-tool="list_files"/);
    assert.equal(count(page, /href="#task-1-r-\d+"/g) >= 2, true);
  });

  test('40+ calls, one bar per request, no external URL, under the size cap', () => {
    assert.ok(count(page, /<div class="call" data-tool=/g) >= 40);
    assert.equal(count(page, BAR_LINK), entriesOf(session, 'usage') + entriesOf(session, 'compaction'));
    assert.doesNotMatch(page, /https?:\/\//);
    assert.ok(Buffer.byteLength(page) < PAGE_MAX_BYTES);
  });
});

// =============================================================================================
// 4. Bad input and scale

describe('bad input', () => {
  test('a torn last line and an unknown entry type are skipped and reported, and everything else is still shown', async (t) => {
    const file = await recordSession(t, { script: [say('Hello there.')], tasks: ['hi'] });
    const tornLine = sessionLines(file).length + 2;
    appendFileSync(file, `${JSON.stringify({ type: 'hologram', text: 'from a later format' })}\n`);
    appendFileSync(file, JSON.stringify({ type: 'message', message: { role: 'user', content: 'torn' } }).slice(0, 30));
    const { page, warnings } = await exported(file);
    assert.equal(warnings.length, 2);
    assert.match(warnings[0]!, new RegExp(`session\\.jsonl line ${tornLine} is not a complete entry`));
    assert.match(warnings[1]!, /1 "hologram" entry not shown/);
    for (const warning of warnings) assert.ok(page.includes(escapeHtml(warning)), 'the warning is on the page');
    assert.match(page, /Hello there\./);
    assert.doesNotMatch(page, /from a later format/);
  });

  test('a session of a newer format exports what it can, and says which format it read', async (t) => {
    const file = await recordSession(t, { script: [say('Hello there.')], tasks: ['hi'] });
    const lines = sessionLines(file);
    writeFileSync(
      file,
      [lines[0]!.replace(`"version":${SESSION_VERSION}`, '"version":3'), ...lines.slice(1)].join('\n'),
    );
    const { page, warnings } = await exported(file);
    assert.deepEqual(warnings, [
      'session.jsonl is session format 3; this page reads 1 and 2, so what it shows may be incomplete',
    ]);
    assert.match(page, /Hello there\./);
  });

  test('a format 2 session is read without a format warning', async (t) => {
    const file = await recordSession(t, { script: [say('Hello there.')], tasks: ['hi'] });
    const lines = sessionLines(file);
    writeFileSync(
      file,
      [lines[0]!.replace(`"version":${SESSION_VERSION}`, '"version":2'), ...lines.slice(1)].join('\n'),
    );
    assert.deepEqual((await exported(file)).warnings, []);
  });

  test('a missing sub-agent file is marked on the page, not a crash', async (t) => {
    const file = await recordSession(t, {
      script: [call('task', { description: 'look around', prompt: 'What is here?' }), say('Nothing much.')],
      tasks: ['look around'],
      config: () => ({ taskModel: new ScriptedModel([say('A few files.')]) }),
    });
    await rm(file.replace(/\.jsonl$/, '.task-1.jsonl'));
    const { page, warnings } = await exported(file);
    assert.deepEqual(warnings, ['sub-agent task-1 (session.task-1.jsonl): its session file is missing']);
    assert.match(page, /<div class="subagent missing">[\s\S]*?its session file is missing/);
    assert.ok(page.indexOf('class="subagent missing"') > page.indexOf('data-tool="task"'), 'marked under its call');
  });

  test('a session cannot pull another file on disk into its page: a linked file must be a plain name beside it', async (t) => {
    const dir = await tempDir(t);
    await writeFile(
      path.join(dir, 'secret.txt'),
      JSON.stringify({ type: 'message', message: { role: 'user', content: 'SECRET' } }),
    );
    const file = path.join(dir, 'inner', 'session.jsonl');
    await mkdir(path.dirname(file));
    writeFileSync(
      file,
      `${JSON.stringify({ type: 'subagent', id: 'task-1', description: 'x', file: '../secret.txt' })}\n`,
    );
    const { page, warnings } = await exported(file);
    assert.doesNotMatch(page, /SECRET/);
    assert.match(warnings.join('\n'), /not a plain name beside this session/);
    assert.equal(linkProblem('/etc/passwd', 0), linkProblem('../x.jsonl', 0));
    assert.equal(linkProblem('s.task-1.jsonl', 0), null);
  });

  test('a session that links to itself stops at the nesting limit instead of reading forever', async (t) => {
    const file = path.join(await tempDir(t), 'loop.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ type: 'subagent', id: 'task-1', description: 'me', file: 'loop.jsonl' })}\n`,
    );
    const { warnings } = await exported(file);
    assert.match(warnings.join('\n'), /nest more than 3 deep/);
  });

  test('a file with no session entry is refused with one line, and the command line exits 2', async (t) => {
    const dir = await tempDir(t);
    writeFileSync(path.join(dir, 'notes.txt'), 'just some text\n');
    await assert.rejects(exportSession(path.join(dir, 'notes.txt')), /holds no session entry/);
    const errors: string[] = [];
    t.mock.method(console, 'error', (line: string) => errors.push(line));
    assert.equal(await cli([path.join(dir, 'missing.jsonl')]), 2);
    assert.equal(await cli([]), 2);
    assert.equal(await cli([path.join(dir, 'notes.txt'), '--context-window', 'lots']), 2);
    assert.deepEqual(
      errors.map((line) => line.split('\n').length),
      [1, 1, 1],
    );
    assert.match(errors[0]!, /^export: cannot read .*missing\.jsonl: no such file$/);
  });
});

describe('scale', () => {
  test('a 1,000-message session with long results stays under 5 MB: long texts are cut in the page, never in the file', async (t) => {
    const file = path.join(await tempDir(t), 'big.jsonl');
    writeFileSync(file, longSession(1_000, 12_000));
    const before = createHash('sha256').update(readFileSync(file)).digest('hex');
    const { page, warnings } = await exported(file);
    assert.equal(count(page, /id="m-\d+"/g), 1_000);
    assert.ok(Buffer.byteLength(page) <= PAGE_MAX_BYTES, `${Buffer.byteLength(page)} bytes`);
    assert.match(warnings.join('\n'), /to stay under 5 MB, the page shows at most [\d,]+ characters of any text/);
    assert.match(page, /characters left out of this page; the session file has them all/);
    assert.equal(
      createHash('sha256').update(readFileSync(file)).digest('hex'),
      before,
      'the session file is untouched',
    );
  });
});
