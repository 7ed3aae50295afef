import { expect, it } from "vitest";

import * as api from "../src/index.js";

/** The public runtime API of @deerflow/knowledge-citations. Change it on purpose, here. */
const PUBLIC_EXPORTS = [
  "CITATION_LABEL_PREFIX",
  "CONTROL",
  "ENVELOPE_ERRORS",
  "ENVELOPE_VERSION",
  "IDENTITY_FIELDS",
  "ID_DOMAIN_TAG",
  "ID_HEX_CHARS",
  "ID_PATTERN",
  "KNOWLEDGE_SOURCES_KEY",
  "MAX_DATASET_NAME_CHARS",
  "MAX_DESTINATION_CHARS",
  "MAX_EXCERPT_CHARS",
  "MAX_LABEL_CHARS",
  "MAX_PAGE",
  "MAX_PROVIDER_CHARS",
  "MAX_SOURCES",
  "MAX_TITLE_CHARS",
  "MAX_URL_CHARS",
  "MIN_PAGE",
  "OPTIONAL_FIELDS",
  "PROVIDER_PATTERN",
  "RECORD_FIELDS",
  "REJECTION_REASONS",
  "REQUIRED_FIELDS",
  "RESERVED_KEYS",
  "RETRIEVAL_SOURCES_KEY",
  "SOURCE_HANDLE_PREFIX",
  "URL_PATTERN",
  "VERSION_KEY",
  "WHITE_SPACE",
  "canonicalIdentity",
  "codePointLength",
  "codePointSlice",
  "codePointToUtf16Index",
  "findCitations",
  "handleFor",
  "hasControl",
  "hasLoneSurrogate",
  "isBlank",
  "isValidDatasetName",
  "isValidExcerpt",
  "isValidId",
  "isValidPage",
  "isValidProvider",
  "isValidTitle",
  "isValidUrl",
  "readEnvelope",
  "relabelOrphans",
  "sourceId",
  "textParts",
  "utf16ToCodePointIndex",
  "validateRecordFields",
];

it("keeps the sorted public export list stable", () => {
  expect(Object.keys(api).sort()).toEqual(PUBLIC_EXPORTS);
  expect([...PUBLIC_EXPORTS].sort()).toEqual(PUBLIC_EXPORTS);
});
