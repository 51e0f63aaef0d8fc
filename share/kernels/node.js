// A hutch kernel: a Node.js interpreter that stays up in a live sandbox
// and runs one request after another in one global context
// (hutch-exec(1), --kernel node). It is started as the sandbox's job
// like any other, with this text as its -e argument.
//
// fd 0 is a stream socket to the sandbox's supervisor: requests and
// replies, each a 4-byte big-endian length and that many bytes of JSON
// (the wire of python.py). fds 1 and 2 are the call's stdout and stderr.
// The supervisor trusts nothing written here.
//
// SIGINT (the call's deadline) interrupts running code (vm's
// breakOnSigint) or an awaited promise; one that comes while nothing
// runs is ignored.
'use strict';
const net = require('net');
const util = require('util');
const vm = require('vm');

const VALUE_MAX = 65536;
const FRAME_MAX = 1 << 26;
globalThis.require = require;

const sock = new net.Socket({ fd: 0, readable: true, writable: true });
// the code's stdin reads nothing (fd 0 is ours: node cannot move it)
let stdin = null;
Object.defineProperty(process, 'stdin', {
  configurable: true,
  get: () => stdin || (stdin = require('fs').createReadStream('/dev/null')),
});
let buf = Buffer.alloc(0);
let busy = false;
let interrupt = null;
const queue = [];

process.on('SIGINT', () => { if (interrupt) interrupt(); });
sock.on('end', () => process.exit(0));
sock.on('error', () => process.exit(0));
sock.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  while (buf.length >= 4) {
    const n = buf.readUInt32BE(0);
    if (n > FRAME_MAX) process.exit(1);
    if (buf.length < 4 + n) break;
    queue.push(JSON.parse(buf.subarray(4, 4 + n).toString('utf8')));
    buf = buf.subarray(4 + n);
  }
  pump();
});

function interrupted() {
  const e = new Error('Script execution interrupted.');
  e.code = 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
  return e;
}

// an error's stack from the code's own frames: the driver's are noise
function trim(stack) {
  return String(stack).split('\n').filter((l) => !/^\s+at /.test(l) || l.includes('<kernel>')).join('\n');
}

async function run(req) {
  let status = 'ok', value = null, ename = '';
  try {
    let v = vm.runInThisContext(String(req.code || ''), { filename: '<kernel>', breakOnSigint: true });
    if (v && typeof v.then === 'function') {
      v = await new Promise((resolve, reject) => {
        interrupt = () => reject(interrupted());
        v.then(resolve, reject);
      });
    }
    if (v !== undefined) {
      globalThis._ = v;
      value = util.inspect(v);
      if (value.length > VALUE_MAX) value = value.slice(0, VALUE_MAX) + '...';
    }
  } catch (e) {
    if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') {
      status = 'interrupted';
      process.stderr.write('Interrupted\n');
    } else {
      status = 'error';
      ename = (e && e.name) || typeof e;
      process.stderr.write(trim((e && e.stack) || String(e)) + '\n');
    }
  } finally {
    interrupt = null;
  }
  return { status, value, ename };
}

async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const body = Buffer.from(JSON.stringify(await run(queue.shift())), 'utf8');
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length, 0);
    sock.write(Buffer.concat([head, body]));
  }
  busy = false;
}
