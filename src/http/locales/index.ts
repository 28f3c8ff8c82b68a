// Every language's catalogue, by the locale tags of core/locales.ts.
import type { Locale } from '../../core/locales.js'
import { ar } from './ar.js'
import { de } from './de.js'
import { type Catalogue, en } from './en.js'
import { es } from './es.js'
import { fr } from './fr.js'
import { it } from './it.js'
import { ja } from './ja.js'
import { nl } from './nl.js'
import { pl } from './pl.js'
import { ptBR } from './pt-BR.js'

export type { Catalogue, MessageKey } from './en.js'

export const CATALOGUES: Readonly<Record<Locale, Catalogue>> = { en, de, fr, es, it, nl, 'pt-BR': ptBR, pl, ja, ar }
