/**
 * SHA-256 (FIPS 180-4) of a string's UTF-8 bytes, synchronous, as hex.
 *
 * Why not Web Crypto: `crypto.subtle.digest` is async, so evidence could no longer be verified
 * during render (every chip would first draw unverified, then flip), and `crypto.subtle` does not
 * exist outside secure contexts (a self-hosted chat UI served over plain http on a LAN), where
 * verification must still work. Why not a hashing library: ids hash a few hundred bytes, once per
 * tool message, and this one function is all a browser bundle needs (a tenth of a general one).
 * Checked against Node's `crypto` on random inputs and against the contract's id vectors.
 */

// The first 32 bits of the fractional parts of the cube roots of the first 64 primes (§4.2.2).
const K = new Uint32Array(64);
// The first 32 bits of the fractional parts of the square roots of the first 8 primes (§5.3.3).
const H0 = new Uint32Array(8);

function fractionBits(value: number): number {
  return ((value - Math.floor(value)) * 0x100000000) >>> 0;
}

{
  let found = 0;
  for (let candidate = 2; found < 64; candidate++) {
    let prime = true;
    for (let d = 2; d * d <= candidate; d++) {
      if (candidate % d === 0) {
        prime = false;
        break;
      }
    }
    if (!prime) continue;
    if (found < 8) H0[found] = fractionBits(Math.sqrt(candidate));
    K[found++] = fractionBits(Math.cbrt(candidate));
  }
}

const rotr = (x: number, n: number): number => (x >>> n) | (x << (32 - n));

/** The lowercase hex SHA-256 of `text` encoded as UTF-8 (lone surrogates become U+FFFD). */
export function sha256Hex(text: string): string {
  const data = new TextEncoder().encode(text);
  const length = data.length;
  // Message, 0x80, zeros, 64-bit big-endian bit length: a multiple of 64 bytes.
  const padded = new Uint8Array((((length + 8) >> 6) + 1) << 6);
  padded.set(data);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(length / 0x20000000));
  view.setUint32(padded.length - 4, (length << 3) >>> 0);
  const h = H0.slice();
  const w = new Uint32Array(64);
  for (let block = 0; block < padded.length; block += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(block + 4 * t);
    for (let t = 16; t < 64; t++) {
      const a = w[t - 15] as number;
      const b = w[t - 2] as number;
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      w[t] = (w[t - 16] as number) + s0 + (w[t - 7] as number) + s1;
    }
    let [a, b, c, d, e, f, g, hh] = h as unknown as [number, number, number, number, number, number, number, number];
    for (let t = 0; t < 64; t++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + (K[t] as number) + (w[t] as number)) | 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] = (h[0] as number) + a;
    h[1] = (h[1] as number) + b;
    h[2] = (h[2] as number) + c;
    h[3] = (h[3] as number) + d;
    h[4] = (h[4] as number) + e;
    h[5] = (h[5] as number) + f;
    h[6] = (h[6] as number) + g;
    h[7] = (h[7] as number) + hh;
  }
  let hex = "";
  for (const word of h) hex += word.toString(16).padStart(8, "0");
  return hex;
}
