/**
 * What every page but the audit viewer starts with: the API's address, the header's page links, sign-in with the
 * token the tab keeps (shared by all pages), and the account bar. The page draws itself into #main once signed in.
 */
import { type ApiClient, ApiError, apiClient, describeError } from './api.ts';
import { loadConfig } from './config.ts';
import { fill, h } from './element.ts';
import { startingToken } from './hosted-sign-in.ts';
import { pageNav } from './pages.ts';
import { type Claims, claimsOf, forgetToken, keepToken, signInOnFragmentToken } from './session.ts';
import { accountBar } from './views/account.ts';
import { signInForm } from './views/sign-in.ts';

export interface PageContext {
  api: ApiClient;
  claims: Claims;
  main: HTMLElement;
  /** Shows a message in the page's alert region (role=alert); '' clears it. */
  report(message: string): void;
  /** What went wrong, in words; a 401 signs out with that message instead. */
  fail(error: unknown): void;
}

const required = (id: string) => {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
};

/** Boots a page: `href` is its own file (marked current in the header), `render` draws it for a signed-in user. */
export function startPage(href: string, render: (context: PageContext) => void | Promise<void>): void {
  const main = required('main');
  const account = required('account');
  const alert = required('alert');
  const report = (message: string) => fill(alert, message ? h('p', { class: 'notice notice-error' }, message) : null);

  async function boot() {
    required('pages').replaceWith(pageNav(href));
    const { apiBaseUrl, signIn: hosted } = await loadConfig();

    function signIn(token: string) {
      keepToken(token);
      const claims = claimsOf(token) ?? {};
      const api = apiClient(apiBaseUrl, token);
      fill(
        account,
        accountBar(claims, () => signOut()),
      );
      report('');
      const fail = (error: unknown) => {
        if (error instanceof ApiError && error.status === 401) signOut(describeError(error, apiBaseUrl));
        else report(describeError(error, apiBaseUrl));
      };
      Promise.resolve(render({ api, claims, main, report, fail })).catch(fail);
    }

    function signOut(message?: string) {
      forgetToken();
      fill(account);
      report('');
      fill(main, signInForm(signIn, message));
      main.querySelector<HTMLElement>('textarea')?.focus();
    }

    const start = await startingToken(hosted);
    if (start.token) signIn(start.token);
    else signOut(start.problem);
    signInOnFragmentToken(signIn);
  }

  boot().catch((error: unknown) => {
    fill(
      main,
      h(
        'p',
        { class: 'notice notice-error', role: 'alert' },
        `The page could not start: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
  });
}
