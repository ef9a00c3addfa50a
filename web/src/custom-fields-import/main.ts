import { startPage } from '../page-shell.ts';
import { importWizard } from './wizard.ts';

startPage('custom-fields-import.html', importWizard);
