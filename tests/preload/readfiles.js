// readfiles.js MODE DIR N: Node.js reads DIR/f1 ... DIR/fN with
// fs.readFile, through libuv's thread pool: each readFile is a chain of
// requests (open, fstat, read, close) whose completions a pool thread
// posts to the main loop, a write to an eventfd (uv_async_send) that ends
// the loop's wait in epoll (tests/preload/run_check.sh, case node).
//   parallel  all at once
//   chain     one after the other: the loop waits for each request
// Prints "read N files, B bytes".
'use strict';
const fs = require('fs');
const [mode, dir, n] = [process.argv[2], process.argv[3], +process.argv[4]];
let done = 0, bytes = 0;
function read(i, then) {
  fs.readFile(`${dir}/f${i}`, (err, data) => {
    if (err) throw err;
    bytes += data.length;
    if (++done === n) console.log(`read ${done} files, ${bytes} bytes`);
    else if (then) then(i + 1);
  });
}
if (mode === 'parallel') {
  for (let i = 1; i <= n; i++) read(i, null);
} else if (mode === 'chain') {
  const next = (i) => read(i, next);
  next(1);
} else {
  console.error('usage: node readfiles.js parallel|chain DIR N');
  process.exit(2);
}
