'use client';
import { createContext, useContext, type ReactNode } from 'react';
import type { Identity } from '../lib/api-types';

const IdentityContext = createContext<Identity | null>(null);

export function IdentityProvider({ identity, children }: { identity: Identity; children: ReactNode }) {
  return <IdentityContext.Provider value={identity}>{children}</IdentityContext.Provider>;
}

export function useIdentity(): Identity {
  const identity = useContext(IdentityContext);
  if (!identity) throw new Error('useIdentity outside the signed-in console');
  return identity;
}

export function useCanAct(): boolean {
  // An unknown role (server without whoami) leaves the decision to the server, which checks every action.
  return useIdentity().role !== 'viewer';
}
