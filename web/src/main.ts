import { startViewer } from './app.ts';
import { loadApiBaseUrl } from './config.ts';
import { fill, h } from './element.ts';
import { pageNav } from './pages.ts';
import { signInOnFragmentToken, storedToken, takeTokenFromFragment } from './session.ts';

const required = (id: string) => {
  const element = document.getElementById(id);
  if (!element) throw new Error(`index.html has no #${id}`);
  return element;
};

async function boot() {
  required('pages').replaceWith(pageNav('index.html'));
  const apiBaseUrl = await loadApiBaseUrl();
  const viewer = startViewer(apiBaseUrl, {
    main: required('main'),
    account: required('account'),
    alert: required('alert'),
  });
  const token = takeTokenFromFragment() ?? storedToken();
  if (token) viewer.signIn(token);
  else viewer.signOut();
  signInOnFragmentToken(viewer.signIn);
}

boot().catch((error: unknown) => {
  const main = document.getElementById('main') ?? document.body;
  fill(
    main,
    h(
      'p',
      { class: 'notice notice-error', role: 'alert' },
      `The audit viewer could not start: ${error instanceof Error ? error.message : String(error)}`,
    ),
  );
});
