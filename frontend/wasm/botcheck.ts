// Tierdesk bot check: turns one message's input events into a feature vector and a
// 64-bit fingerprint bound to the server's per-connection nonce (docs/botcheck.md).
//
// Built by scripts/wasm-build.sh with the AssemblyScript compiler pinned in
// package.json; the output (frontend/static/tierdesk/botcheck.wasm) is committed and a
// test rebuilds it and compares the bytes. Only scalar imports/exports, so the widget
// needs no loader glue and the server can mirror the digest in Python
// (chatbot/botcheck/digest.py).

// Event kinds pushed by the widget.
const MOUSE: i32 = 0; // pointer move (x, y)
const KEYDOWN: i32 = 1; // a key went down (which key is never passed in)
const KEYUP: i32 = 2;
const TOUCH: i32 = 3; // touch move (x, y)
const FOCUS: i32 = 4; // focus, blur or visibility change

const MAX_EVENTS: i32 = 4096;
export const N_FEATURES: i32 = 18;

const kinds = new StaticArray<i32>(MAX_EVENTS);
const ts = new StaticArray<f64>(MAX_EVENTS);
const xs = new StaticArray<f64>(MAX_EVENTS);
const ys = new StaticArray<f64>(MAX_EVENTS);
let count: i32 = 0;

// Features in milli-units (integers), so the digest is exact on both sides.
const features = new StaticArray<i32>(N_FEATURES);
const nonce = new StaticArray<u8>(16);
let h: u64 = 0;

// Scratch space, reused for each pointer kind and for key intervals.
const sv = new StaticArray<f64>(MAX_EVENTS);
const sa = new StaticArray<f64>(MAX_EVENTS);

export function reset(): void {
  count = 0;
}

export function push(kind: i32, t: f64, x: f64, y: f64): void {
  if (count >= MAX_EVENTS) return; // a cap, not an error: enough evidence by then
  unchecked((kinds[count] = kind));
  unchecked((ts[count] = t));
  unchecked((xs[count] = x));
  unchecked((ys[count] = y));
  count++;
}

function q(v: f64): i32 {
  if (!isFinite(v)) return 0;
  const r = Math.floor(v * 1000.0 + 0.5);
  if (r > 2000000000.0) return 2000000000;
  if (r < -2000000000.0) return -2000000000;
  return <i32>r;
}

function meanOf(a: StaticArray<f64>, n: i32): f64 {
  if (n <= 0) return 0.0;
  let s: f64 = 0.0;
  for (let i = 0; i < n; i++) s += unchecked(a[i]);
  return s / <f64>n;
}

function stdOf(a: StaticArray<f64>, n: i32, m: f64): f64 {
  if (n <= 1) return 0.0;
  let s: f64 = 0.0;
  for (let i = 0; i < n; i++) {
    const d = unchecked(a[i]) - m;
    s += d * d;
  }
  return Math.sqrt(s / <f64>(n - 1));
}

// Pointer features of one kind: [n, path px, straightness, speed CV, accel CV,
// turn-angle std (rad), pause share] in base..base+6, and the straight-turn share in 17.
function pointer(kind: i32, base: i32): void {
  let n: i32 = 0;
  let path: f64 = 0.0;
  let chordSum: f64 = 0.0; // straight-line length of each stroke, summed
  let nv: i32 = 0; // speed samples
  let na: i32 = 0; // turn angles
  let pauses: i32 = 0;
  let gaps: i32 = 0;
  let px: f64 = 0.0, py: f64 = 0.0, pt: f64 = 0.0;
  let sx: f64 = 0.0, sy: f64 = 0.0; // stroke start
  let lastAngle: f64 = 0.0;
  let haveAngle = false;
  let prevSpeed: f64 = -1.0;
  let prevSpeedT: f64 = 0.0;
  let turnSum: f64 = 0.0;
  let turnSq: f64 = 0.0;
  let nt: i32 = 0;
  let flat: i32 = 0; // turns of (almost) nothing: a ruler line, even with corners
  for (let i = 0; i < count; i++) {
    if (unchecked(kinds[i]) != kind) continue;
    const x = unchecked(xs[i]);
    const y = unchecked(ys[i]);
    const t = unchecked(ts[i]);
    if (n == 0) {
      sx = x;
      sy = y;
    } else {
      const dt = t - pt;
      const dx = x - px;
      const dy = y - py;
      const d = Math.sqrt(dx * dx + dy * dy);
      gaps++;
      if (dt > 300.0) {
        // A pause ends the stroke: humans stop, aim, and move again.
        pauses++;
        chordSum += Math.sqrt((px - sx) * (px - sx) + (py - sy) * (py - sy));
        sx = px;
        sy = py;
        haveAngle = false;
        prevSpeed = -1.0;
      } else if (d >= 1.0) {
        path += d;
        const speed = d / Math.max(dt, 1.0);
        if (nv < MAX_EVENTS) {
          unchecked((sv[nv] = speed));
          nv++;
        }
        if (prevSpeed >= 0.0) {
          const acc = (speed - prevSpeed) / Math.max(t - prevSpeedT, 1.0);
          if (na < MAX_EVENTS) {
            unchecked((sa[na] = acc));
            na++;
          }
        }
        prevSpeed = speed;
        prevSpeedT = t;
        if (d >= 2.0) {
          const angle = Math.atan2(dy, dx);
          if (haveAngle) {
            let turn = angle - lastAngle;
            while (turn > Math.PI) turn -= 2.0 * Math.PI;
            while (turn < -Math.PI) turn += 2.0 * Math.PI;
            turnSum += turn;
            turnSq += turn * turn;
            nt++;
            if (Math.abs(turn) < 0.02) flat++;
          }
          lastAngle = angle;
          haveAngle = true;
        }
      }
    }
    px = x;
    py = y;
    pt = t;
    n++;
  }
  if (n > 0) chordSum += Math.sqrt((px - sx) * (px - sx) + (py - sy) * (py - sy));
  const sm = meanOf(sv, nv);
  const ss = stdOf(sv, nv, sm);
  let absAcc: f64 = 0.0;
  for (let i = 0; i < na; i++) absAcc += Math.abs(unchecked(sa[i]));
  absAcc = na > 0 ? absAcc / <f64>na : 0.0;
  const am = meanOf(sa, na);
  const as_ = stdOf(sa, na, am);
  // Turns are counted between segments of at least 2 px, to ignore pixel rounding.
  const pairs: f64 = <f64>Math.max(nt, 1);
  const turnMean = turnSum / pairs;
  const turnStd = Math.sqrt(Math.max(turnSq / pairs - turnMean * turnMean, 0.0));
  unchecked((features[base] = n * 1000));
  unchecked((features[base + 1] = q(path)));
  unchecked((features[base + 2] = q(path > 0.0 ? Math.min(chordSum / path, 1.0) : 0.0)));
  unchecked((features[base + 3] = q(sm > 0.0 ? ss / sm : 0.0)));
  unchecked((features[base + 4] = q(absAcc > 0.0 ? as_ / absAcc : 0.0)));
  unchecked((features[base + 5] = q(turnStd)));
  unchecked((features[base + 6] = q(gaps > 0 ? <f64>pauses / <f64>gaps : 0.0)));
  unchecked((features[17] = q(nt > 0 ? <f64>flat / <f64>nt : 0.0)));
}

// Keyboard rhythm: [n keys, interval mean ms, interval CV, interval entropy
// (normalised 0..1), long-pause share, hold-time mean ms].
function keyboard(base: i32): void {
  let n: i32 = 0;
  let prev: f64 = -1.0;
  let ni: i32 = 0;
  let lastDown: f64 = -1.0;
  let holdSum: f64 = 0.0;
  let holds: i32 = 0;
  for (let i = 0; i < count; i++) {
    const k = unchecked(kinds[i]);
    const t = unchecked(ts[i]);
    if (k == KEYDOWN) {
      if (prev >= 0.0 && ni < MAX_EVENTS) {
        unchecked((sv[ni] = t - prev));
        ni++;
      }
      prev = t;
      lastDown = t;
      n++;
    } else if (k == KEYUP && lastDown >= 0.0) {
      holdSum += t - lastDown;
      holds++;
      lastDown = -1.0;
    }
  }
  const m = meanOf(sv, ni);
  const s = stdOf(sv, ni, m);
  // Entropy of the intervals over 32 log-spaced bins, 10 ms .. 3 s (each bin 1.2x the
  // last), normalised by the most a sample of this size could reach.
  const bins = new StaticArray<i32>(32);
  let longs: i32 = 0;
  for (let i = 0; i < ni; i++) {
    const v = Math.max(unchecked(sv[i]), 1.0);
    if (v > 500.0) longs++;
    let b = <i32>Math.floor((Math.log(v / 10.0) / Math.log(300.0)) * 32.0);
    if (b < 0) b = 0;
    if (b > 31) b = 31;
    unchecked((bins[b] = bins[b] + 1));
  }
  let ent: f64 = 0.0;
  for (let b = 0; b < 32; b++) {
    const c = unchecked(bins[b]);
    if (c > 0) {
      const p = <f64>c / <f64>ni;
      ent -= p * Math.log2(p);
    }
  }
  const maxEnt = Math.log2(<f64>Math.min(ni, 32));
  unchecked((features[base] = n * 1000));
  unchecked((features[base + 1] = q(m)));
  unchecked((features[base + 2] = q(m > 0.0 ? s / m : 0.0)));
  unchecked((features[base + 3] = q(maxEnt > 0.0 ? ent / maxEnt : 0.0)));
  unchecked((features[base + 4] = q(ni > 0 ? <f64>longs / <f64>ni : 0.0)));
  unchecked((features[base + 5] = q(holds > 0 ? holdSum / <f64>holds : 0.0)));
}

// Computes the feature vector of the events pushed since reset(). Slots: 0..6 pointer
// (the mouse; on a phone without one, touch), 7..12 keyboard, 13 touch moves,
// 14 focus/visibility changes, 15 composition time ms, 16 pointer is touch (0/1000),
// 17 share of straight-ahead turns (pointer).
export function compute(): i32 {
  let mice: i32 = 0;
  let touches: i32 = 0;
  let focus: i32 = 0;
  let first: f64 = 0.0;
  let last: f64 = 0.0;
  for (let i = 0; i < count; i++) {
    const k = unchecked(kinds[i]);
    if (k == MOUSE) mice++;
    if (k == TOUCH) touches++;
    if (k == FOCUS) focus++;
    const t = unchecked(ts[i]);
    if (i == 0 || t < first) first = t;
    if (i == 0 || t > last) last = t;
  }
  const touchPointer = mice == 0 && touches > 0;
  pointer(touchPointer ? TOUCH : MOUSE, 0);
  keyboard(7);
  unchecked((features[13] = touches * 1000));
  unchecked((features[14] = focus * 1000));
  unchecked((features[15] = q(last - first)));
  unchecked((features[16] = touchPointer ? 1000 : 0));
  return N_FEATURES;
}

export function feature(i: i32): i32 {
  return i >= 0 && i < N_FEATURES ? unchecked(features[i]) : 0;
}

// The widget re-signs a stored feature vector when it resends a message after a
// reconnect (a new connection has a new nonce).
export function setFeature(i: i32, v: i32): void {
  if (i >= 0 && i < N_FEATURES) unchecked((features[i] = v));
}

export function setNonce(i: i32, b: i32): void {
  if (i >= 0 && i < 16) unchecked((nonce[i] = <u8>b));
}

// FNV-1a 64 over: nonce (16 bytes) | seq (u32 LE) | features (i32 LE each) | the
// message text (UTF-16 code units, LE), then MurmurHash3's fmix64 for avalanche.
// Not a MAC (the browser holds every input): it binds the vector to this connection
// and this message, so a captured frame is useless on another connection.
const FNV_OFFSET: u64 = 0xcbf29ce484222325;
const FNV_PRIME: u64 = 0x100000001b3;

function mix8(b: u32): void {
  h = (h ^ <u64>(b & 0xff)) * FNV_PRIME;
}

function mix32(v: u32): void {
  mix8(v);
  mix8(v >> 8);
  mix8(v >> 16);
  mix8(v >> 24);
}

export function signBegin(seq: u32): void {
  h = FNV_OFFSET;
  for (let i = 0; i < 16; i++) mix8(<u32>unchecked(nonce[i]));
  mix32(seq);
  for (let i = 0; i < N_FEATURES; i++) mix32(<u32>unchecked(features[i]));
}

export function signChar(c: u32): void {
  mix8(c);
  mix8(c >> 8);
}

export function signEnd(): void {
  let k = h;
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccd;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53;
  k ^= k >> 33;
  h = k;
}

export function digestHi(): u32 {
  return <u32>(h >> 32);
}

export function digestLo(): u32 {
  return <u32>(h & 0xffffffff);
}
