// Solves the ALTCHA v2 challenge given as JSON on stdin with the ALTCHA project's own library
// (`altcha/lib`, PBKDF2 through WebCrypto), and prints the payload a client sends: base64 of
// `{challenge, solution}`. Started by tests/lineup/door.rs.
import { solveChallenge, pbkdf2 } from 'altcha/lib';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const challenge = JSON.parse(input);
const solution = await solveChallenge({ challenge, deriveKey: pbkdf2.deriveKey, timeout: 60000 });
if (!solution) {
  console.error('no solution within the timeout');
  process.exit(1);
}
const payload = { challenge: { parameters: challenge.parameters, signature: challenge.signature }, solution };
process.stdout.write(Buffer.from(JSON.stringify(payload)).toString('base64'));
