// Seeded pseudo-random numbers for the differential tester.
//
// Every generated test file gets its own stream derived from (run seed, file index), so a
// single failing file can be regenerated from the two numbers printed in the report without
// replaying the whole run.

// sfc32: small, fast, good enough statistically, and identical on every Node version
// (Math.random() is neither seedable nor stable).
function sfc32(a, b, c, d) {
  return () => {
    a |= 0; b |= 0; c |= 0; d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}

// splitmix32 spreads the (seed, index) pair over all four sfc32 state words, so that
// neighbouring indices do not produce correlated streams.
function splitmix32(x) {
  return () => {
    x = (x + 0x9e3779b9) | 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Rng {
  constructor(seed, stream = 0) {
    const sm = splitmix32((Math.imul(seed >>> 0, 0x2545f491) ^ Math.imul(stream >>> 0, 0x9e3779b1)) | 0);
    this.next = sfc32(sm(), sm(), sm(), sm());
    for (let i = 0; i < 12; i++) this.next(); // warm-up: sfc32's first outputs are weak
  }
  float() { return this.next(); }
  // Integer in [lo, hi] inclusive.
  int(lo, hi) { return lo + Math.floor(this.next() * (hi - lo + 1)); }
  chance(p) { return this.next() < p; }
  pick(arr) {
    if (arr.length === 0) throw new Error('pick from empty array');
    return arr[Math.floor(this.next() * arr.length)];
  }
  // pickW([[weight, value], ...]) — weighted choice; zero weights are never chosen.
  pickW(pairs) {
    let total = 0;
    for (const [w] of pairs) total += w;
    let x = this.next() * total;
    for (const [w, v] of pairs) {
      if (w <= 0) continue;
      if (x < w) return v;
      x -= w;
    }
    for (let i = pairs.length - 1; i >= 0; i--) if (pairs[i][0] > 0) return pairs[i][1];
    throw new Error('pickW with no positive weight');
  }
  shuffle(arr) {
    const a = arr.slice();
    for (let i = a.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a;
  }
  // Up to n distinct elements of arr, in random order.
  sample(arr, n) { return this.shuffle(arr).slice(0, Math.max(0, n)); }
}
