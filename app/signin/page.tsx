import type { Metadata } from 'next';
import { Suspense } from 'react';
import { SignInForm } from './signin-form';

export const metadata: Metadata = { title: 'Sign in' };

export default function SignInPage() {
  return (
    <main id="main" className="signin">
      <h1>Holdfast console</h1>
      <Suspense fallback={<p>Loading…</p>}>
        <SignInForm />
      </Suspense>
    </main>
  );
}
