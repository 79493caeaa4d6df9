/**
 * A minimal line plot written as a PNG with node:zlib (no dependency): white canvas,
 * axes with numeric tick labels in a 3x5 pixel font, one polyline with dots per series.
 * Enough for a bench figure; not a charting library.
 */
import { deflateSync } from 'node:zlib';

export interface Series {
  points: { x: number; y: number }[];
  color: [number, number, number];
}

const DIGITS: Record<string, string[]> = {
  '0': ['111', '101', '101', '101', '111'], '1': ['010', '110', '010', '010', '111'], '2': ['111', '001', '111', '100', '111'],
  '3': ['111', '001', '111', '001', '111'], '4': ['101', '101', '111', '001', '001'], '5': ['111', '100', '111', '001', '111'],
  '6': ['111', '100', '111', '101', '111'], '7': ['111', '001', '010', '010', '010'], '8': ['111', '101', '111', '101', '111'],
  '9': ['111', '101', '111', '001', '111'], '.': ['000', '000', '000', '000', '010'], k: ['100', '101', '110', '101', '101'],
};

export function linePlotPng(series: Series[], size = { width: 720, height: 420 }): Buffer {
  const { width, height } = size;
  const pixels = Buffer.alloc(width * height * 3, 255);
  const set = (x: number, y: number, [r, g, b]: [number, number, number]) => {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    const i = (Math.round(y) * width + Math.round(x)) * 3;
    pixels[i] = r;
    pixels[i + 1] = g;
    pixels[i + 2] = b;
  };
  const line = (x0: number, y0: number, x1: number, y1: number, color: [number, number, number]) => {
    const steps = Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0), 1);
    for (let s = 0; s <= steps; s++) set(x0 + ((x1 - x0) * s) / steps, y0 + ((y1 - y0) * s) / steps, color);
  };
  const text = (label: string, x: number, y: number, scale = 2) => {
    [...label].forEach((ch, k) =>
      (DIGITS[ch] ?? []).forEach((row, dy) =>
        [...row].forEach((bit, dx) => {
          if (bit === '1') for (let a = 0; a < scale; a++) for (let b = 0; b < scale; b++) set(x + (k * 4 + dx) * scale + a, y + dy * scale + b, [0, 0, 0]);
        }),
      ),
    );
  };
  const margin = { left: 70, right: 20, top: 20, bottom: 40 };
  const all = series.flatMap((s) => s.points);
  const maxX = Math.max(...all.map((p) => p.x), 1);
  const maxY = Math.max(...all.map((p) => p.y), 1) * 1.1;
  const px = (x: number) => margin.left + (x / maxX) * (width - margin.left - margin.right);
  const py = (y: number) => height - margin.bottom - (y / maxY) * (height - margin.top - margin.bottom);
  const black: [number, number, number] = [0, 0, 0];
  const grey: [number, number, number] = [220, 220, 220];
  for (let t = 0; t <= 4; t++) {
    const xv = (maxX * t) / 4;
    const yv = (maxY * t) / 4;
    line(px(xv), py(0), px(xv), py(maxY), grey);
    line(px(0), py(yv), px(maxX), py(yv), grey);
    const xl = xv >= 1000 ? `${(xv / 1000).toFixed(1)}k` : String(Math.round(xv));
    text(xl, px(xv) - xl.length * 4, height - margin.bottom + 8);
    const yl = yv >= 10 ? String(Math.round(yv)) : yv.toFixed(1);
    text(yl, margin.left - 8 - yl.length * 8, py(yv) - 5);
  }
  line(px(0), py(0), px(maxX), py(0), black);
  line(px(0), py(0), px(0), py(maxY), black);
  for (const s of series) {
    s.points.forEach((p, i) => {
      const prev = s.points[i - 1];
      if (prev) line(px(prev.x), py(prev.y), px(p.x), py(p.y), s.color);
      for (let a = -3; a <= 3; a++) for (let b = -3; b <= 3; b++) set(px(p.x) + a, py(p.y) + b, s.color);
    });
  }
  return encodePng(width, height, pixels);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

function encodePng(width: number, height: number, rgb: Buffer): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: truecolour RGB
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width * 3 + 1)] = 0; // filter: none
    rgb.copy(raw, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
