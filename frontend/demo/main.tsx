import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import "../src/components/knowledge.css";
import "./demo.css";
import { App } from "./App.js";

const root = document.getElementById("root");
if (root !== null) {
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}
