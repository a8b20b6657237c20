// A real terminal emulator for the tests (xterm.js, headless): the program's bytes are written to it and what it
// renders is read back, so a test sees what a person would see, not the escape codes that were sent. Its OSC
// handlers are hooked: a clipboard write (OSC 52) or a hyperlink (OSC 8) that reached it is counted.

import { Writable } from 'node:stream';
import xterm from '@xterm/headless';
import type { Output } from '../terminal.ts';

export interface Emulator {
  /** A stream to give the program as its terminal (isTTY, 100 columns, colour as asked). */
  out: Output;
  /** Writes bytes as they came from a pseudo-terminal (its newlines already \r\n). */
  write(bytes: string): Promise<void>;
  /** Every row the terminal shows or has scrolled back, trailing spaces trimmed, once all written is rendered. */
  rows(): Promise<string[]>;
  /** The OSC commands that reached the terminal: "52" (clipboard), "8" (hyperlink), with their data. */
  oscs: string[];
}

/** A terminal 100 columns wide; what is written to `out` gets the \n → \r\n a pseudo-terminal adds (onlcr). */
export function emulator({ colour = false, rows = 30 } = {}): Emulator {
  const term = new xterm.Terminal({ cols: 100, rows, scrollback: 1_000, allowProposedApi: true });
  const oscs: string[] = [];
  for (const ident of [52, 8])
    term.parser.registerOscHandler(ident, (data) => {
      oscs.push(`${ident};${data}`);
      return true;
    });
  const write = (bytes: string) => new Promise<void>((resolve) => term.write(bytes, resolve));
  let pending = Promise.resolve();
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      pending = pending.then(() => write(chunk.toString('utf8').replaceAll('\n', '\r\n')));
      done();
    },
  });
  const out: Output = Object.assign(stream, { isTTY: true, columns: 100, hasColors: () => colour });
  return {
    out,
    write: (bytes) => (pending = pending.then(() => write(bytes))),
    rows: async () => {
      await pending;
      await write('');
      const buffer = term.buffer.active;
      return [...Array(buffer.length).keys()].map((i) => (buffer.getLine(i)?.translateToString(true) ?? '').trimEnd());
    },
    oscs,
  };
}
