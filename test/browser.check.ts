// npm run test:browser: exported session pages opened from disk in a real headless Chromium (Debian's, at
// /usr/bin/chromium, driven by playwright-core; no browser is downloaded). What only a browser can tell: the
// page runs with no console error and no policy violation, fetches nothing, runs nothing from the session,
// and its tooltips and folds work. Kept out of `npm test` because it starts a browser (a few seconds).
// With UPDATE_SCREENSHOT=1 it also rewrites docs/session-page.png, the README's picture of the page; otherwise the
// screenshot goes to a temporary folder, so a test run leaves the working tree as it was.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { defaultOut, exportSession } from '../app/session-page/export.ts';
import { exportP4 } from '../app/session-page/p4-example.ts';
import { HOSTILE, hostileSession, richSession } from './session-page-fixtures.ts';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const README_SCREENSHOT = path.join(import.meta.dirname, '..', 'app', 'session-page', 'session-page.png');
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

  test('a screenshot for the README (docs/session-page.png with UPDATE_SCREENSHOT=1)', async () => {
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
