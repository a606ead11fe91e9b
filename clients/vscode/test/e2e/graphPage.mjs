// The graph renderer in a real browser, interactively: load a graph HTML page (`fxscope graph
// --format html`) in headless Chromium, at a wide then a narrow window, and report what the
// canvas shows: whether the findings column is open, how much of the drawing is inside the
// canvas after each resize, and what the findings button does.
//
// Environment: FXSCOPE_CHROMIUM (executable), FXSCOPE_PAGE (the HTML file). Prints one JSON object.

/* global document, getComputedStyle -- the page.evaluate callbacks run in the browser */

import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const page_ = process.env.FXSCOPE_PAGE;
const browser = await chromium.launch({ executablePath: process.env.FXSCOPE_CHROMIUM, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"] });
const result = { errors: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  page.on("pageerror", (e) => result.errors.push(String(e.message)));
  await page.goto(pathToFileURL(page_).href);
  await page.waitForSelector("body[data-fxscope-ready]");
  const details = page.locator("details.fxscope-target").first();
  if (!(await details.evaluate((d) => d.open))) await details.locator("summary").click();
  await page.waitForSelector("g.fxg-node");

  /** Nodes drawn inside the visible canvas, the canvas size, and whether the findings column shows. */
  const view = () => page.evaluate(() => {
    const canvas = document.querySelector(".fxg-canvas").getBoundingClientRect();
    const nodes = [...document.querySelectorAll("g.fxg-node")].map((n) => n.getBoundingClientRect());
    const inside = nodes.filter((r) => r.right > canvas.left && r.left < canvas.right && r.bottom > canvas.top && r.top < canvas.bottom);
    const side = document.querySelector(".fxg-side");
    return {
      canvas: { width: Math.round(canvas.width), height: Math.round(canvas.height) },
      nodes: nodes.length, inside: inside.length,
      sideShown: !!side && getComputedStyle(side).display !== "none",
      button: document.querySelector(".fxg-side-toggle")?.textContent ?? "",
    };
  });
  result.wide = await view();
  // Drag the drawing away, then shrink the window: the drawing comes back into the canvas.
  const svg = page.locator("svg.fxg-svg").first();
  const box = await svg.boundingBox();
  await page.mouse.move(box.x + 50, box.y + 50);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width + 600, box.y + 50, { steps: 5 });
  await page.mouse.up();
  result.dragged = await view();
  await page.setViewportSize({ width: 480, height: 700 });
  await page.waitForTimeout(500);
  result.narrow = await view();
  await page.locator(".fxg-side-toggle").first().click();
  result.toggled = await view();
} catch (e) {
  result.errors.push(String(e?.stack ?? e));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(result) + "\n");
