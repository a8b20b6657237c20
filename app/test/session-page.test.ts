// The session page (session-page/), offline and without a browser: sessions recorded by the real harness on a
// scripted model are exported, and the HTML is checked as text. Each test is named after the failure it
// prevents. What only a browser can tell (nothing runs, the tooltip shows) is in app/test/browser.check.ts.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test, type TestContext } from 'node:test';
import { loadSession, SESSION_VERSION, type SessionHeader } from '../session-file.ts';
import { costOf } from 'reference-harness';
import { call, say, ScriptedModel, usageOf } from 'reference-harness/scripted-model';
import { cli, defaultOut, exportSession } from '../session-page/export.ts';
import { dollars, escapeHtml, html } from '../session-page/html.ts';
import { renderMarkdown } from '../session-page/markdown.ts';
import { exportP4 } from '../session-page/p4-example.ts';
import { PAGE_MAX_BYTES } from '../session-page/page.ts';
import { linkProblem } from '../session-page/read.ts';
import { keyLines } from '../session-page/transcript.ts';
import { longSession } from './long-session.ts';
import {
  HOSTILE,
  hostileSession,
  recordSession,
  richSession,
  showcaseSession,
  tempDir,
} from './session-page-fixtures.ts';

async function exported(file: string): Promise<{ page: string; warnings: string[]; out: string }> {
  const { out, warnings } = await exportSession(file);
  return { page: readFileSync(out, 'utf8'), warnings, out };
}

/** Markup with its white space as the browser lays it out: runs of it one space, none before a tag's closing `>`. */
const flat = (markup: string) => markup.replace(/\s+/g, ' ').replace(/ >/g, '>');

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
  test('a session run with --no-sandbox says so at the top of its page, and one run without it does not', async (t) => {
    const dir = await tempDir(t);
    const write = (name: string, noSandbox: boolean) => {
      const file = path.join(dir, name);
      const header = { type: 'session', version: 2, model: 'scripted', root: dir, startedAt: '2026-12-01T00:00:00Z' };
      const task = { role: 'user', content: [{ type: 'text', text: 'check' }] };
      const lines = [
        { ...header, options: { noSandbox } },
        { type: 'task', text: 'check' },
        { type: 'message', message: task },
      ];
      writeFileSync(file, lines.map((line) => JSON.stringify(line)).join('\n') + '\n');
      return file;
    };
    const outside = /run outside the OS sandbox \(--no-sandbox\)/;
    assert.match(flat((await exported(write('outside.jsonl', true))).page), outside);
    assert.doesNotMatch(flat((await exported(write('inside.jsonl', false))).page), outside);
  });

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
        /input [\d,]+: uncached [\d,]+, cache write [\d,]+, cache read [\d,]+\noutput [\d,]+\ntook \d+ ms\ncost \$/,
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
// 4. Around the transcript: times, approvals, the check's output, diffs, totals, sub-agents

describe('the showcase session’s page (a priced model, a sub-agent, a failed check, approvals, Ctrl-C)', () => {
  let session: Awaited<ReturnType<typeof showcaseSession>>;
  let [raw, page] = ['', ''];
  const cleanups: (() => Promise<void>)[] = [];
  before(async () => {
    const context = { after: (cleanup: () => Promise<void>) => cleanups.push(cleanup) } as unknown as TestContext;
    session = await showcaseSession(context, { contextWindow: 200_000 });
    raw = (await exported(session.file)).page;
    page = flat(raw);
  });
  after(() => Promise.all(cleanups.map((cleanup) => cleanup())));

  test('the session file says when each entry was written, how long each model and tool call took, and which call an approval was about; it still resumes', async () => {
    type Line = { type: string; at?: string; ms?: number; callMs?: Record<string, number>; callId?: string };
    const lines = sessionLines(session.file).map((line) => JSON.parse(line) as Line);
    assert.ok(
      lines.slice(1).every((entry) => Date.parse(entry.at ?? '') > 0),
      'every entry after the header has a time',
    );
    assert.ok(lines.filter((e) => e.type === 'usage' || e.type === 'reply').every((e) => typeof e.ms === 'number'));
    const ran = lines.flatMap((e) => Object.keys(e.callMs ?? {}));
    assert.ok(ran.includes('toolu_s2_0') && ran.includes('toolu_s5_0'), `the read and the approved edit ran: ${ran}`);
    assert.ok(!ran.includes('toolu_s4_0'), 'the denied edit did not run');
    assert.deepEqual(
      lines.filter((e) => e.type === 'approval').map((e) => e.callId),
      ['toolu_s4_0', 'toolu_s5_0'],
    );
    const child = JSON.parse(sessionLines(session.file.replace(/\.jsonl$/, '.task-1.jsonl'))[0]!) as SessionHeader;
    assert.deepEqual([child.model, child.price], ['claude-haiku-4-5', undefined], 'the sub-agent’s own model');
    const loaded = await loadSession(session.file);
    assert.deepEqual(loaded.warnings, []);
  });

  test('a failed check shows the lines that say why (the assertion), not its first line (node:assert:90, a stack frame)', () => {
    const gate = /<div class="gate-verdict">([\s\S]*?)<details/.exec(raw)![1]!;
    const shown = /<pre class="check-output">([\s\S]*?)<\/pre>/.exec(gate)![1]!;
    assert.match(shown, /^AssertionError \[ERR_ASSERTION\]: Expected values to be strictly equal:\n-1 !== 5\n/);
    assert.doesNotMatch(shown, /node:|^\s+at /m);
    assert.match(page, /the check’s whole output: \d+ lines/);
  });

  test('an edit is a diff with the file’s line numbers, not its old_str and new_str', () => {
    assert.doesNotMatch(page, /<th>old_str<\/th>|<th>new_str<\/th>/);
    const approved = /approved by you[\s\S]*?<pre class="diff">([\s\S]*?)<\/pre>/.exec(raw)![1]!;
    const rows = [
      ...approved.matchAll(
        /<span class="(del|add|same)"><span class="ln">(\d*)<\/span><span class="ln">(\d*)<\/span>([^<]*)<\/span>/g,
      ),
    ];
    assert.deepEqual(
      rows.map(([, kind, before, after, text]) => [kind, before, after, text]),
      [
        ['del', '2', '', '-exports.add = (a, b) =&gt; a - b;'],
        ['add', '', '2', '+exports.add = function add(a, b) {'],
        ['add', '', '3', '+  return a + b;'],
        ['add', '', '4', '+};'],
      ],
    );
  });

  test('what the session spent includes its sub-agents: the page’s total is the harness’s own', () => {
    assert.ok(session.costUsd !== null && session.costUsd > 0);
    assert.match(page, new RegExp(`<span class="total-cost">\\${dollars(session.costUsd)}</span>`));
    assert.match(page, /of which 1 sub-agent: 2 requests, \$0\.\d{4}; the agent\s+itself: \d+ requests/);
    assert.match(page, new RegExp(`cost so far, sub-agents included: \\${dollars(session.costUsd)}`));
  });

  test('a sub-agent ends in its own words: it reported back, with its report; it has no gate and no exit code', () => {
    const sub = /<details class="subagent"[\s\S]*?<\/summary>/.exec(page)![0];
    assert.match(sub, /reported back to the agent/);
    assert.match(
      sub,
      /<blockquote class="report">add\.js defines add; test\.js checks that add\(2, 3\) is 5\.<\/blockquote>/,
    );
    const nested = page.slice(page.indexOf('<details class="subagent"'), page.indexOf('id="m-2"'));
    assert.match(nested, /halt: reported back to the agent/);
    assert.doesNotMatch(page, /unverified|exit code 0<\/span>\s*<\/summary>/);
  });

  test('approvals, what the person typed, and their Ctrl-C are shown where they happened', () => {
    assert.match(
      page,
      /edit_file [^<]*<\/span>\s*<span class="approval no">denied by you: “keep it a named function”<\/span>/,
    );
    assert.match(page, /edit_file [^<]*<\/span>\s*<span class="approval yes">approved by you<\/span>/);
    assert.match(page, /<span class="label">typed<\/span> during the run[\s\S]*?<q>and keep the comment above it<\/q>/);
    assert.match(page, /<span class="label">Ctrl-C<\/span> the run was stopped/);
    assert.match(page, /halt: interrupted · exit code 130/);
  });

  test('durations: each task, each request, each call that ran', () => {
    const tasks = /<ol class="tasks">([\s\S]*?)<\/ol>/.exec(page)![1]!;
    assert.equal(count(tasks, /· took \d+(\.\d)? (ms|s)/g), 2);
    assert.equal(
      count(page, /<div class="req" id="r-\d+"><a [^>]*>request \d+<\/a> \(turn \d+\), \d+(\.\d)? (ms|s):/g),
      6,
    );
    assert.ok(count(page, /<span class="took">· ran \d+(\.\d)? (ms|s)<\/span>/g) >= 3);
    assert.match(page, /\d+:\d\d<\/span>/, 'and when, since the start');
  });

  test('with a 200,000-token window and small requests the scale fits the requests, and the window is named above it', () => {
    const chart = /<svg\s+class="requests"[\s\S]*?<\/svg>/.exec(page)![0];
    assert.doesNotMatch(chart, /<line class="window"/);
    assert.match(
      chart,
      /above this scale: context window 200,000 and compaction at 75%: 150,000 \(the largest request used 0% of\s+the window\)/,
    );
    const ticks = [...chart.matchAll(/<text class="tick" [^>]*>([\d,]+)<\/text>/g)].map((m) =>
      Number(m[1]!.replace(/,/g, '')),
    );
    assert.ok(Math.max(...ticks) <= 4_000, `the scale ends at ${Math.max(...ticks)}, near the largest request`);
  });

  test('an older session without times exports as before: no durations, no warnings', async (t) => {
    const dir = await tempDir(t);
    for (const name of ['showcase.jsonl', 'showcase.task-1.jsonl']) {
      const lines = sessionLines(path.join(path.dirname(session.file), name)).map((line) => {
        const { at: _, ms: __, callMs: ___, callId: ____, ...rest } = JSON.parse(line) as Record<string, unknown>;
        return JSON.stringify(rest);
      });
      writeFileSync(path.join(dir, name), `${lines.join('\n')}\n`);
    }
    const old = await exported(path.join(dir, 'showcase.jsonl'));
    assert.deepEqual(old.warnings, []);
    assert.doesNotMatch(old.page, / took | ran \d|class="at"/);
    assert.match(flat(old.page), /<div class="person"><span class="approval yes">approved by you<\/span>/);
  });
});

describe('prices', () => {
  test('a recorded price with its own cache rate prices the page as the harness priced the run', async (t) => {
    const price = { input: 4, output: 20, cacheRead: 0.05 };
    const usage = { input_tokens: 10, cache_read_input_tokens: 1_000_000, output_tokens: 100 };
    const file = path.join(await tempDir(t), 'priced.jsonl');
    const header = {
      type: 'session',
      version: 2,
      model: 'some-model',
      root: '/p',
      startedAt: '2026-12-01T10:00:00Z',
      price,
    };
    const entries = [
      header,
      { type: 'message', message: { role: 'user', content: 'hi' } },
      { type: 'usage', turn: 1, usage },
    ];
    writeFileSync(file, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
    const { page } = await exported(file);
    const cost = costOf(price, usageOf(usage))!;
    assert.equal(dollars(cost), '$0.2020');
    assert.match(flat(page), /<span class="total-cost">\$0\.2020<\/span>/);
  });
});

describe('the lines of a failed check that say why', () => {
  test('an uncaught error: its message, not where it was thrown or the stack', () => {
    const output = [
      'node:internal/modules/run_main:123',
      '    triggerUncaughtException(',
      '    ^',
      '',
      "Error: Cannot find module './add.js'",
      'Require stack:',
      '- /tmp/p/test.js',
      '    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)',
      '    at Module._load (node:internal/modules/cjs/loader:1051:27) {',
      "  code: 'MODULE_NOT_FOUND',",
      '}',
      '',
      'Node.js v20.20.0',
    ].join('\n');
    assert.deepEqual(keyLines(output), ["Error: Cannot find module './add.js'", 'Require stack:', '- /tmp/p/test.js']);
  });

  test('a test runner’s report: from the first failure on', () => {
    const output = [
      '▶ add',
      '  ✔ adds zero (0.4ms)',
      '  ✖ adds two numbers (1.1ms)',
      '    AssertionError: 1 !== 5',
      '',
      'ℹ tests 2',
      'ℹ fail 1',
    ].join('\n');
    assert.deepEqual(keyLines(output).slice(0, 2), ['  ✖ adds two numbers (1.1ms)', '    AssertionError: 1 !== 5']);
  });

  test('output that names no failure: its last lines', () => {
    const output = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n');
    assert.deepEqual(
      keyLines(output),
      Array.from({ length: 8 }, (_, i) => `line ${i + 13}`),
    );
  });
});

// =============================================================================================
// 5. Bad input and scale

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
  test('a long session’s transcript comes in parts of 100 messages, plain then packed, each listing what it holds so a link can find it', async (t) => {
    const file = path.join(await tempDir(t), 'big.jsonl');
    writeFileSync(file, longSession(300, 600));
    const { out } = await exportSession(file, undefined, { maxBytes: 1_000_000 });
    const page = readFileSync(out, 'utf8');
    const parts = [...page.matchAll(/<section class="part( packed)?"([^>]*)>/g)];
    assert.match(
      parts.map(([, packed]) => (packed ? 'packed' : 'plain')).join(' '),
      /^(plain )+packed( packed)*$/,
      'the first parts plain (up to an eighth of the page’s limit), the rest packed',
    );
    const ranges = parts.map(([, , attributes]) => /data-m="(\d+) (\d+)"/.exec(attributes!)!.slice(1).map(Number));
    assert.deepEqual(
      ranges.map(([first]) => first),
      [0, 101, 201],
      'each part starts at a reply, so a call and its result stay together',
    );
    ranges.forEach(([, last], i) => assert.equal(last! + 1, ranges[i + 1]?.[0] ?? 300, 'the parts follow each other'));
    assert.match(parts.at(-1)![2]!, /data-r="101 149"/, 'and say which requests they hold');
    const ids = [...unpacked(page).matchAll(/id="m-(\d+)"/g)].map((match) => Number(match[1]));
    assert.deepEqual(ids, [...Array(300).keys()], 'every message, once, in order');
  });

  test('a long session’s page stays under its size limit: long texts are cut in the page, and say so, never in the file', async (t) => {
    const file = path.join(await tempDir(t), 'big.jsonl');
    writeFileSync(file, longSession(300, 3_000));
    const before = createHash('sha256').update(readFileSync(file)).digest('hex');
    const { out, warnings } = await exportSession(file, undefined, { maxBytes: 200_000 });
    const page = readFileSync(out, 'utf8');
    assert.ok(Buffer.byteLength(page) <= 200_000, `${Buffer.byteLength(page)} bytes`);
    // Each call's head says the call in words, so the page is a little larger than its arguments alone make it.
    assert.deepEqual(warnings, [
      'to stay under 0.2 MB, 2 parts of the transcript show at most 1,000 characters of any text; ' +
        '1 part of the transcript shows at most 250 characters of any text',
    ]);
    const whole = unpacked(page);
    assert.equal(
      count(whole, /In this part, each text shows at most 1,000 characters, so that the page stays\s+under\s+0\.2 MB/g),
      2,
    );
    assert.equal(
      count(whole, /In this part, each text shows at most 250 characters, so that the page stays\s+under\s+0\.2 MB/g),
      1,
    );
    assert.match(whole, /characters left out of this page; the session file has them all/);
    assert.equal(
      createHash('sha256').update(readFileSync(file)).digest('hex'),
      before,
      'the session file is untouched',
    );
  });
});

/** The page as the browser shows it once every packed part is unpacked: each part's gzipped markup in its place. */
function unpacked(page: string): string {
  return page.replace(
    /<script type="application\/octet-stream" class="packed">([^<]*)<\/script>/g,
    (_, packed: string) => gunzipSync(Buffer.from(packed, 'base64')).toString('utf8'),
  );
}
