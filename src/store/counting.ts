// A stream that tells, as its bytes are read, how many have passed: a put's progress.

import { Transform, type Readable } from 'node:stream';

/** `src` as read through a counter; `src` itself when no one listens. An error of `src` ends the count's stream. */
export function counted(src: Readable, onBytes: ((read: number) => void) | undefined): Readable {
  if (!onBytes) return src;
  let read = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      read += chunk.length;
      onBytes(read);
      done(null, chunk);
    },
  });
  src.on('error', (e) => counter.destroy(e));
  return src.pipe(counter);
}
