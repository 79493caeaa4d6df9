import { redirect } from 'next/navigation';
import type { ReactNode } from 'react';
import { IdentityProvider } from '../components/identity';
import { Shell } from '../components/shell';
import { identityOf, readSession } from '../lib/server/auth';

export const dynamic = 'force-dynamic';

/** Every console page needs a signed-in token; without one, go to the sign-in page. */
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const session = await readSession();
  if (!session) redirect('/signin');
  return (
    <IdentityProvider identity={identityOf(session)}>
      <Shell>{children}</Shell>
    </IdentityProvider>
  );
}
