// npm run test:browser: exported session pages opened from disk in a real headless Chromium (Debian's, at
// /usr/bin/chromium, driven by playwright-core; no browser is downloaded). What only a browser can tell: the
// page runs with no console error and no policy violation, fetches nothing, runs nothing from the session,
// and its tooltips and folds work. Kept out of `npm test` because it starts a browser (a few seconds).
// The page as a person meets it: the chart's scale and lines, diffs, approvals, the failed check's output, durations,
// totals with sub-agents, a sub-agent's report, and a 10,000-message session that still opens at once.
// With UPDATE_SCREENSHOT=1 it also rewrites app/session-page/session-page.png, the README's picture of the page;
// otherwise the screenshot goes to a temporary folder, so a test run leaves the working tree as it was.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test, type TestContext } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { defaultOut, exportSession } from '../session-page/export.ts';
import { dollars } from '../session-page/html.ts';
import { exportP4 } from '../session-page/p4-example.ts';
import { PAGE_MAX_BYTES } from '../session-page/page.ts';
import { writeLongSession } from './long-session.ts';
import { HOSTILE, hostileSession, richSession, showcaseSession } from './session-page-fixtures.ts';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const README_SCREENSHOT = path.join(import.meta.dirname, '..', 'session-page', 'session-page.png');
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** Everything a page did that it must not: console errors (CSP violations are among them), uncaught
 *  exceptions, dialogs (alert, confirm, prompt) and requests for anything but the file itself. */
interface Misdeeds {
  errors: string[];
  dialogs: string[];
  requests: string[];
}

let browser: Browser;
let dir: string;

async function open(file: string): Promise<{ page: Page; misdeeds: Misdeeds }> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
  page.setDefaultTimeout(5_000);
  const misdeeds: Misdeeds = { errors: [], dialogs: [], requests: [] };
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') misdeeds.errors.push(message.text());
  });
  page.on('pageerror', (error) => misdeeds.errors.push(error.message));
  page.on('dialog', (dialog) => {
    misdeeds.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss();
  });
  page.on('request', (request) => {
    if (request.url() !== pathToFileURL(file).href) misdeeds.requests.push(request.url());
  });
  await page.goto(pathToFileURL(file).href);
  return { page, misdeeds };
}

const clean = (misdeeds: Misdeeds) => assert.deepEqual(misdeeds, { errors: [], dialogs: [], requests: [] });

const sessionEntries = (file: string, type: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter((line) => (JSON.parse(line) as { type: string }).type === type).length;

before(async () => {
  assert.ok(
    existsSync(CHROMIUM),
    `no Chromium at ${CHROMIUM}: install it with "apt-get update && apt-get install -y chromium" (or set CHROMIUM)`,
  );
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'browser-check-')));
});

after(async () => {
  await browser?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the P4 story’s page (40+ calls, a compaction, a sub-agent) in Chromium', () => {
  let page: Page;
  let misdeeds: Misdeeds;
  let session: string;
  before(async () => {
    ({ session } = await exportP4(dir));
    ({ page, misdeeds } = await open(defaultOut(session)));
  });

  test('it renders with no console error, no policy violation and no request', async () => {
    assert.ok((await page.locator('.call').count()) >= 40);
    clean(misdeeds);
  });

  test('the chart has one bar per request', async () => {
    const requests = sessionEntries(session, 'usage') + sessionEntries(session, 'compaction');
    assert.equal(await page.locator('#chart a.bar').count(), requests);
    assert.equal(await page.locator('#chart a.bar.compaction').count(), sessionEntries(session, 'compaction'));
  });

  test('hovering or focusing a bar shows its numbers, and clicking it opens its place in the transcript', async () => {
    const tip = page.locator('#tip');
    await page.locator('#chart a.bar').nth(2).hover();
    assert.match(await tip.innerText(), /^request 3 \(turn 3\)\ninput [\d,]+: uncached [\d,]+, cache write 0/);
    assert.match(await tip.innerText(), /\ntook \d+ ms\ncost \$[\d.]+, \$[\d.]+ so far$/);
    await page.locator('#chart a.bar.compaction').first().focus();
    assert.match(await tip.innerText(), /the summary of compaction 1/);
    assert.ok(await tip.isVisible());
    // Request 1 lies in the part the compaction replaced, folded: following the link opens the fold.
    assert.equal(await page.locator('#r-1').isVisible(), false);
    await page.locator('#chart a.bar').first().click();
    assert.ok(await page.locator('#r-1').isVisible());
    await page.locator('button[data-fold=close]').click();
  });

  test('the compaction shows its summary and the marked cut; the part it replaced is folded', async () => {
    // The last compaction: the one before it is folded away with the part it replaced.
    const compaction = page.locator('section.compaction').last();
    assert.match(await compaction.innerText(), /SUMMARY\s+Goal: a table of contents in notes\/README\.md\./i);
    assert.match(await page.locator('.cut').last().innerText(), /the verbatim part starts here/);
    assert.equal(await page.locator('details.replaced').first().getAttribute('open'), null);
  });

  test('the sub-agent’s calls appear under the task call that started it', async () => {
    const nested = page.locator('.call[data-tool="task"] details.subagent .call[data-tool="list_files"]');
    assert.equal(await nested.count(), 1);
    // The task call was early, so it is in the part the compaction folded away.
    await page.locator('details.replaced > summary').first().click();
    await page.locator('.call[data-tool="task"] details.subagent > summary').click();
    assert.ok(await nested.isVisible());
    assert.match(await nested.innerText(), /path\s+notes/);
  });

  test('printing shows the folded parts as folded, and hides the toolbar and tooltip', async () => {
    await page.locator('button[data-fold=close]').click();
    await page.emulateMedia({ media: 'print' });
    assert.equal(await page.locator('.toolbar').isVisible(), false);
    const marker = await page.evaluate<string>(
      `getComputedStyle(document.querySelector('details.replaced:not([open]) > summary'), '::after').content`,
    );
    assert.match(marker, /folded/);
    await page.emulateMedia({ media: 'screen' });
    // Printing itself opens every fold (the page's beforeprint), and closes them again afterwards.
    await page.evaluate(`addEventListener('beforeprint', () => {
      window.foldsAtPrint = [...document.querySelectorAll('details')].map((fold) => fold.open);
    })`);
    await page.pdf({ path: path.join(dir, 'p4.pdf') });
    const foldsAtPrint = await page.evaluate<boolean[]>('window.foldsAtPrint');
    assert.ok(foldsAtPrint.length > 10 && foldsAtPrint.every((open) => open), 'every fold open while printing');
    assert.equal(await page.locator('details[open]').count(), 0, 'and closed again after');
    clean(misdeeds);
  });

  test('the cost has an axis of its own under the bars: its line never crosses the window or the 75% line', async () => {
    const window = await box(page, '#chart line.window');
    const threshold = await box(page, '#chart line.threshold');
    const zero = await box(page, '#chart .axis line.grid');
    const cost = await box(page, '#chart polyline.cost');
    assert.ok(window.y < threshold.y && threshold.y < zero.y, 'both lines are drawn, on the token scale');
    assert.ok(cost.y > zero.y + zero.height, `the cost line (from y ${cost.y}) starts below the bars (${zero.y})`);
    assert.match(
      (await page.locator('#chart .cost-panel').textContent()) ?? '',
      /cost so far, sub-agents included: \$/,
    );
  });

  test('a screenshot for the README (app/session-page/session-page.png with UPDATE_SCREENSHOT=1)', async () => {
    const screenshot = process.env.UPDATE_SCREENSHOT === '1' ? README_SCREENSHOT : path.join(dir, 'session-page.png');
    await page.goto(`${pathToFileURL(defaultOut(session)).href}#`);
    await page.locator('#chart a.bar.compaction').first().hover();
    await mkdir(path.dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot, clip: { x: 0, y: 0, width: 1200, height: 1000 } });
    assert.ok(existsSync(screenshot));
  });
});

describe('a hostile session in Chromium', () => {
  test('runs nothing, loads nothing, and shows the hostile strings as text', async (t) => {
    const { out } = await exportSession(await hostileSession(t));
    const { page, misdeeds } = await open(out);
    await page.locator('button[data-fold=open]').click();
    assert.equal(await page.locator('img').count(), 0);
    assert.equal(await page.locator('script').count(), 1, 'only the page’s own script');
    const result = await page.locator('.result pre').first().innerText();
    assert.ok(result.includes(HOSTILE.script) && result.includes(HOSTILE.img), result);
    assert.match(
      await page.locator('.msg.assistant .reply').last().innerText(),
      /<\/script><img src=x onerror=alert\(1\)>/,
    );
    assert.match(await page.title(), new RegExp(`^Session ${HOSTILE.fileName}\\.jsonl`));
    clean(misdeeds);
  });
});

describe('a session with steering, refusals and the gate in Chromium', () => {
  test('renders with no console error, and shows each kind of answer', async (t) => {
    const { out } = await exportSession(await richSession(t, 'claude-sonnet-4-5'));
    const { page, misdeeds } = await open(out);
    assert.equal(await page.locator('.result.not-run').count(), 2);
    assert.equal(await page.locator('.steer').count(), 1);
    assert.equal(await page.locator('.gate-verdict').count(), 1);
    await page.locator('#chart a.bar').last().hover();
    assert.match(await page.locator('#tip').innerText(), /cost \$[\d.]+, \$[\d.]+ so far/);
    clean(misdeeds);
  });
});

/** Where an element is drawn, in page pixels. */
async function box(page: Page, selector: string): Promise<{ x: number; y: number; width: number; height: number }> {
  const found = await page.locator(selector).first().boundingBox();
  assert.ok(found, `${selector} is drawn`);
  return found;
}

describe('a session with a sub-agent, a failed check, approvals and Ctrl-C, in a 200,000-token window, in Chromium', () => {
  let page: Page;
  let misdeeds: Misdeeds;
  let session: Awaited<ReturnType<typeof showcaseSession>>;
  const cleanups: (() => Promise<void>)[] = [];
  before(async () => {
    const context = { after: (cleanup: () => Promise<void>) => cleanups.push(cleanup) } as unknown as TestContext;
    session = await showcaseSession(context, { contextWindow: 200_000 });
    ({ page, misdeeds } = await open((await exportSession(session.file)).out));
  });
  after(() => Promise.all(cleanups.map((cleanup) => cleanup())));

  test('the bars stand up and fill the chart: the scale fits the requests, and the window is named above it', async () => {
    const plot = await box(page, '#chart svg.requests');
    const bars = await page
      .locator('#chart a.bar rect:not(.hit)')
      .evaluateAll((rects) =>
        rects
          .map((rect) => rect.getBoundingClientRect())
          .map(({ left, right, top, bottom }) => ({ left, right, top, bottom })),
      );
    const zero = await box(page, '#chart .axis line.grid');
    const tallest = Math.max(...bars.map((bar) => zero.y - bar.top));
    const spread = Math.max(...bars.map((bar) => bar.right)) - Math.min(...bars.map((bar) => bar.left));
    assert.ok(tallest > 150, `the tallest bar stands ${tallest} px high`);
    assert.ok(spread > 0.8 * plot.width, `the bars spread over ${spread} of ${plot.width} px`);
    assert.equal(await page.locator('#chart line.window').count(), 0);
    assert.match(
      (await page.locator('#chart .offscale').textContent()) ?? '',
      /above this scale: context window 200,000 and/,
    );
  });

  test('what the session spent is the harness’s own total, its sub-agent included', async () => {
    assert.ok(session.costUsd !== null);
    assert.equal(await page.locator('.meta .total-cost').innerText(), dollars(session.costUsd));
    assert.match(await page.locator('.meta').innerText(), /of which 1 sub-agent: 2 requests, \$0\.\d{4}/);
  });

  test('the failed check shows why it failed: the assertion, not a stack frame', async () => {
    const shown = await page.locator('.gate-verdict pre.check-output').first().innerText();
    assert.match(shown, /^AssertionError \[ERR_ASSERTION\]: Expected values to be strictly equal:\n-1 !== 5/);
    assert.doesNotMatch(shown, /node:|^\s+at /m);
    assert.equal(
      await page.locator('.gate-verdict details.long').first().getAttribute('open'),
      null,
      'the rest folded',
    );
  });

  test('an edit reads as a diff, with the file’s line numbers; approvals, the typed message and Ctrl-C are shown', async () => {
    const approved = page.locator('.call[data-tool="edit_file"]').last();
    assert.match(await approved.locator('.call-head').innerText(), /edit_file add\.js\s+approved by you/);
    const diff = await approved.locator('pre.diff').innerText();
    assert.match(
      diff,
      /^2-exports\.add = \(a, b\) => a - b;\n2\+exports\.add = function add\(a, b\) \{\n3\+ {2}return/,
    );
    assert.doesNotMatch(await approved.innerText(), /old_str|new_str/);
    const denied = page.locator('.call[data-tool="edit_file"]').first();
    assert.match(await denied.locator('.call-head').innerText(), /denied by you: “keep it a named function”/);
    assert.match(
      await page.locator('.person').first().innerText(),
      /typed during the run .*and keep the comment above it/i,
    );
    assert.match(await page.locator('.person').last().innerText(), /Ctrl-C\s+the run was stopped/i);
  });

  test('durations: each task, each request and each call that ran', async () => {
    assert.match(await page.locator('.tasks li').first().innerText(), /took \d+(\.\d)? (ms|s)$/);
    assert.match(await page.locator('#r-2').innerText(), /^request 2 \(turn 2\), \d+ ms: input/);
    const read = page.locator('.result', { hasText: 'of read_file' }).last();
    assert.match(await read.innerText(), /^RESULT of read_file · ran \d+ ms/);
  });

  test('the sub-agent ends by reporting back, in its own words, with no gate and no exit code', async () => {
    const summary = page.locator('details.subagent > summary');
    const text = await summary.innerText();
    assert.match(text, /find the adder \(4 messages, 2 requests, \d+ ms\): reported back to the agent/);
    assert.match(text, /add\.js defines add; test\.js checks that add\(2, 3\) is 5\./);
    await summary.click();
    assert.match(await page.locator('details.subagent div.halt').innerText(), /^halt: reported back to the agent/);
    assert.doesNotMatch(await page.locator('details.subagent').innerText(), /unverified|exit code/);
    clean(misdeeds);
  });
});

describe('a 10,000-message session in Chromium', () => {
  let out = '';
  before(async () => {
    const file = path.join(dir, 'ten-thousand.jsonl');
    await writeLongSession(file, 10_000, 2_000);
    ({ out } = await exportSession(file));
  });

  // How fast it opens is measured by `npm run bench:app` (session-page), not asserted: a timed check fails on a slow
  // or busy machine without anything being wrong.
  test('its page is at most 5 MB and opens with the start of the transcript shown', async () => {
    assert.ok(statSync(out).size <= PAGE_MAX_BYTES, `${statSync(out).size} bytes`);
    const { page, misdeeds } = await open(out);
    assert.ok(await page.locator('#m-1').isVisible(), 'the transcript starts at once');
    clean(misdeeds);
  });

  test('a link to its last message unpacks that part and shows it; scrolling unpacks the parts it comes to', async () => {
    const { page, misdeeds } = await open(out);
    assert.equal(await page.locator('#m-9999').count(), 0, 'packed until needed');
    await page.evaluate(`location.hash = '#m-9999'`);
    await page.locator('#m-9999').waitFor();
    assert.ok(await page.locator('#m-9999').isVisible());
    const range = await page.locator('.part.packed').nth(40).getAttribute('data-m');
    const middle = page.locator(`.part[data-m="${range}"]`);
    const [first] = (range ?? '').split(' ');
    await middle.scrollIntoViewIfNeeded();
    await page.locator(`#m-${first}`).waitFor();
    assert.doesNotMatch((await middle.getAttribute('class')) ?? '', /packed/);
    clean(misdeeds);
  });
});
