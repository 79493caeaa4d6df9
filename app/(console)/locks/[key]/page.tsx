import type { Metadata } from 'next';
import { LockDetailView } from './lock-detail-view';

export async function generateMetadata({ params }: { params: Promise<{ key: string }> }): Promise<Metadata> {
  const { key } = await params;
  return { title: `Lock ${decodeURIComponent(key)}` };
}

export default async function LockDetailPage({ params }: { params: Promise<{ key: string }> }) {
  const { key } = await params;
  return <LockDetailView lockKey={decodeURIComponent(key)} />;
}
