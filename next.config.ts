import type { NextConfig } from 'next';

/**
 * The operations console. It reaches the lock server only over HTTP from its own
 * route handlers (app/api/**), so nothing here needs the lock service's modules.
 */
const nextConfig: NextConfig = {
  poweredByHeader: false,
  reactStrictMode: true,
  // Type-check the console's own program (app/ and what it imports), and keep Next.js from rewriting the
  // repository's tsconfig.json on every build.
  typescript: { tsconfigPath: 'app/tsconfig.json' },
  // The console never serves third-party frames; deny framing to stop click-jacking of admin actions.
  async headers() {
    return [
      {
        source: '/:path*',
        headers: [
          { key: 'X-Frame-Options', value: 'DENY' },
          { key: 'X-Content-Type-Options', value: 'nosniff' },
          { key: 'Referrer-Policy', value: 'no-referrer' },
        ],
      },
    ];
  },
};

export default nextConfig;
