/**
 * pi-notebook-bridge: lets the pi_notebook agent in a kernel read and edit the notebook that
 * kernel belongs to.
 *
 * The kernel opens a comm on the target `pi_notebook.bridge`. The target is registered on the
 * kernel connection of each notebook panel, so the comm always lands in the panel whose session
 * runs that kernel (not the active one). Requests are `{req, op, ...}`; every request gets one
 * reply `{req, ok, result}` or `{req, ok: false, error, refused}`. Reads and writes go through the
 * notebook's shared model, so an agent's edit is an ordinary document edit: the notebook
 * becomes dirty, the frontend's undo and the checkpoints see it, and nothing is saved for the
 * user. A conflict check (the source the agent read) is done here, in the same turn as the
 * write, so no user keystroke can slip between check and write.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

const TARGET = 'pi_notebook.bridge';
const PROTOCOL = 1;
const SHOW_CELL = 'pi-notebook-bridge:show-cell';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface CellJson {
  id: string;
  cell_type: string;
  source: string;
  metadata?: Json;
  outputs?: Json[];
  execution_count?: number | null;
}

class Refused extends Error {}

function cellsOf(panel: NotebookPanel): Json[] {
  const model = panel.content.model;
  if (!model) {
    throw new Refused('the notebook has no model yet');
  }
  return model.sharedModel.cells as Json[];
}

function cellJson(cell: Json): CellJson {
  const json = cell.toJSON() as CellJson;
  json.source = cell.getSource();
  json.id = cell.getId();
  return json;
}

function indexOf(panel: NotebookPanel, id: string): number {
  const index = cellsOf(panel).findIndex(cell => cell.getId() === id);
  if (index < 0) {
    throw new Refused(`no cell with id ${id} in the notebook (deleted since it was read?)`);
  }
  return index;
}

function checkSource(panel: NotebookPanel, id: string, expect: string | undefined): Json {
  const cell = cellsOf(panel)[indexOf(panel, id)];
  if (expect !== undefined && cell.getSource() !== expect) {
    throw new Refused(`cell ${id} changed since it was read`);
  }
  return cell;
}

function read(panel: NotebookPanel): Json {
  return {
    path: panel.context.path,
    dirty: panel.context.model.dirty,
    cells: cellsOf(panel).map(cellJson)
  };
}

function insert(panel: NotebookPanel, msg: Json): Json {
  const shared = panel.content.model!.sharedModel;
  const cells = cellsOf(panel);
  let index: number = msg.index;
  if (typeof msg.after === 'string') {
    index = indexOf(panel, msg.after) + 1;
  }
  index = Math.max(0, Math.min(index ?? cells.length, cells.length));
  const made = shared.insertCells(index, msg.cells as Json[]);
  return { index, ids: made.map(cell => cell.getId()) };
}

function edit(panel: NotebookPanel, msg: Json): Json {
  const cell = checkSource(panel, msg.id, msg.expect);
  if (msg.cell_type && msg.cell_type !== cell.cell_type) {
    throw new Refused(`cell ${msg.id} is a ${cell.cell_type} cell, not ${msg.cell_type}`);
  }
  cell.setSource(msg.source);
  return { id: msg.id };
}

function remove(panel: NotebookPanel, msg: Json): Json {
  const expect: Json = msg.expect ?? {};
  const ids: string[] = msg.ids;
  for (const id of ids) {
    checkSource(panel, id, expect[id]);
  }
  const shared = panel.content.model!.sharedModel;
  const removed: Json[] = [];
  shared.transact(() => {
    for (const id of ids) {
      const index = indexOf(panel, id);
      removed.push({ index, cell: cellJson(cellsOf(panel)[index]) });
      shared.deleteCell(index);
    }
  });
  return { removed };
}

/**
 * A run's cell whose page was reloaded: the document holds what was last saved, maybe an empty
 * input or no such cell at all. With `source`, the run's own source comes back too (into an
 * empty cell, or a document nobody has edited since it was loaded: never over a user's edit),
 * and with `create` a missing cell is inserted at the end, with the run's id, and the user is
 * told where it is (a notification whose button goes to it).
 */
function restoreCell(app: JupyterFrontEnd, panel: NotebookPanel, msg: Json): boolean {
  const cells = cellsOf(panel);
  if (cells.some(cell => cell.getId() === msg.id)) {
    if (typeof msg.source === 'string') {
      const cell = cells[indexOf(panel, msg.id)];
      const blank = cell.getSource().trim() === '';
      if (cell.cell_type === 'code' && (blank || !panel.context.model.dirty) && cell.getSource() !== msg.source) {
        cell.setSource(msg.source);
      }
    }
    return false;
  }
  if (!msg.create || typeof msg.source !== 'string') {
    return false; // checkSource refuses: no such cell
  }
  const shared = panel.content.model!.sharedModel;
  shared.insertCells(cells.length, [
    { cell_type: 'code', id: msg.id, source: msg.source, metadata: {}, outputs: [], execution_count: null }
  ]);
  const message = 'A pi cell that ran after the last save was not in the notebook: it is back, at the end.';
  void app.commands
    .execute('apputils:notify', {
      message,
      type: 'info',
      options: {
        autoClose: false,
        actions: [{ label: 'Show the cell', commandId: SHOW_CELL, args: { path: panel.context.path, id: msg.id } }]
      }
    })
    .catch(() => undefined); // a frontend without notifications: the cell is there all the same
  return true;
}

/**
 * The run's output is the kernel's answer to the user's own cell, as an executed cell's is,
 * which the frontend trusts: a reloaded notebook that was never saved (so never signed) would
 * otherwise show the live widget as its plain-text fallback, and the card's buttons not at all.
 */
function trust(panel: NotebookPanel, id: string): void {
  const cells = panel.content.model?.cells;
  if (!cells) {
    return;
  }
  for (let i = 0; i < cells.length; i++) {
    const model = cells.get(i);
    if (model.id === id) {
      model.trusted = true;
    }
  }
}

function setOutputs(app: JupyterFrontEnd, panel: NotebookPanel, msg: Json): Json {
  const created = restoreCell(app, panel, msg);
  const cell = checkSource(panel, msg.id, msg.expect);
  if (cell.cell_type !== 'code') {
    throw new Refused(`cell ${msg.id} is not a code cell`);
  }
  const before = { outputs: cell.getOutputs(), execution_count: cell.execution_count, created };
  if (typeof msg.source === 'string') {
    trust(panel, msg.id);
  }
  cell.transact(() => {
    cell.setOutputs(msg.outputs);
    cell.execution_count = msg.execution_count ?? null;
  });
  return before;
}

function showCell(tracker: INotebookTracker, path: string, id: string): void {
  const panel = tracker.find(widget => widget.context.path === path);
  if (!panel) {
    return;
  }
  const index = cellsOf(panel).findIndex(cell => cell.getId() === id);
  if (index >= 0) {
    panel.content.activeCellIndex = index;
    void panel.content.scrollToItem(index, 'center');
  }
}

type Op = (app: JupyterFrontEnd, panel: NotebookPanel, msg: Json) => Json;

const OPS: { [op: string]: Op } = {
  read: (_, panel) => read(panel),
  insert: (_, panel, msg) => insert(panel, msg),
  edit: (_, panel, msg) => edit(panel, msg),
  delete: (_, panel, msg) => remove(panel, msg),
  set_outputs: setOutputs
};

function answer(app: JupyterFrontEnd, comm: Kernel.IComm, panel: NotebookPanel, msg: KernelMessage.ICommMsgMsg): void {
  const data = msg.content.data as Json;
  const op = OPS[data.op];
  let reply: Json;
  try {
    if (!op) {
      throw new Refused(`unknown request ${JSON.stringify(data.op)}`);
    }
    reply = { req: data.req, ok: true, result: op(app, panel, data) };
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    reply = { req: data.req, ok: false, error: text, refused: error instanceof Refused };
  }
  comm.send(reply);
}

function frontendName(app: JupyterFrontEnd): string {
  return app.name.includes('Notebook') ? 'Jupyter Notebook' : 'JupyterLab';
}

function watch(app: JupyterFrontEnd, panel: NotebookPanel): void {
  const registered = new WeakSet<Kernel.IKernelConnection>();
  const register = (): void => {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || registered.has(kernel)) {
      return;
    }
    registered.add(kernel);
    kernel.registerCommTarget(TARGET, (comm: Kernel.IComm) => {
      comm.onMsg = msg => answer(app, comm, panel, msg);
      comm.send({
        op: 'hello',
        protocol: PROTOCOL,
        frontend: frontendName(app),
        version: app.version,
        path: panel.context.path
      });
    });
  };
  panel.sessionContext.kernelChanged.connect(register);
  void panel.sessionContext.ready.then(register);
  register();
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'pi-notebook-bridge:plugin',
  description: 'Lets the pi_notebook agent read and edit the notebook its kernel belongs to.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    app.commands.addCommand(SHOW_CELL, {
      label: 'Show the cell',
      execute: args => showCell(tracker, String(args.path), String(args.id))
    });
    tracker.forEach(panel => watch(app, panel));
    tracker.widgetAdded.connect((_, panel) => watch(app, panel));
  }
};

export default plugin;
