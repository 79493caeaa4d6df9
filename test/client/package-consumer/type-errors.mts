// Must NOT compile: proves the type check reads the package's declarations.
import { LockClient } from '@holdfast/client';

const client = new LockClient({ baseUrl: 'http://127.0.0.1:7070' });
const session = await client.openSession({ owner: 'typed' });
const token: number = (await session.acquire('k'))!.fencingToken;
console.log(token);
