// The Accel language: one grammar for schema files (stdlib/) and job specs.
// Nothing hand-written lives next to this file; compiler/parse walks the generated tree.
grammar Accel;

file : importDecl* decl* EOF ;

// `accelc --set train.steps=5`: statements alone, one per line.
overrides : statement* EOF ;

importDecl : 'import' source=STRING ('as' alias=ident)? ';'? ;

decl
  : enumDecl
  | recordDecl
  | ruleDecl
  | jobDecl
  | letDecl
  ;

// A named constant: `let base_lr = 2e-5`.
letDecl : 'let' name=ident (':' type)? '=' expr ';'? ;

// ---- schema declarations ------------------------------------------------------------------

enumDecl : 'enum' name=ident '{' enumMember (',' enumMember)* ','? '}' ;
enumMember : name=ident ('=' value=STRING)? ;

// `kwargs`, `plugin` and `config` are records with a role; `record` is a plain one; `extend`
// adds fields and rules to a record declared elsewhere. An `open` record is one whose reader
// ignores keys it does not know, so in a config file an unknown key is a warning, not an error.
recordDecl : open='open'? kind=('kwargs' | 'plugin' | 'config' | 'record' | 'extend') name=ident '{' member* '}' ;
member : fieldDecl | ruleDecl ;

fieldDecl
  : name=ident ':' type ('=' defaultValue=expr)? fieldModifier* ';'?
  ;
fieldModifier
  : 'from' 'env' ID (',' ID)*          # envDefault
  | 'where' expr                       # constraint
  | 'alias' ident (',' ident)*         # aliasModifier
  | 'also' ident (',' ident)*          # alsoModifier
  | 'deprecated' message=STRING        # deprecatedModifier
  | 'key' fileKey=STRING               # keyModifier
  ;

type : typeAtom ('|' typeAtom)* ;
typeAtom
  : name=ident ('<' type (',' type)* '>')? optional='?'?
  ;

// `... "message" for accelerate, trainer: ...`: the rule holds only for files run by those tools (`accelc check
// --for`); without it, it holds for every one.
ruleDecl : 'rule' code=ruleCode severity=ID message=STRING ('for' targets+=ident (',' targets+=ident)*)? ':' expr ';'? ;
// Rule ids keep the catalog's spelling: `CFG-010`, `LCH-FSDP-1`, or a plain name.
ruleCode : ID ('-' (ID | INT))* ;

// ---- job specs ----------------------------------------------------------------------------

jobDecl : 'job' name=ident ('extends' base=ident)? block ;

block : '{' statement* '}' ;
statement
  : path block ';'?              # blockStatement
  | path '=' expr ';'?           # assignStatement
  ;
path : ident ('.' ident)* ;

// Declaration keywords are reserved only where they start a declaration, so schemas may
// still name a field `config`, `env` or `record`.
ident : ID | 'enum' | 'kwargs' | 'plugin' | 'config' | 'record' | 'rule' | 'job' | 'extends'
      | 'from' | 'env' | 'where' | 'let' | 'import' | 'as' | 'alias' | 'deprecated' | 'set' | 'key' | 'extend' | 'open' | 'for' | 'also' ;

// ---- expressions (shared) -----------------------------------------------------------------

expr
  : op=('-' | 'not') expr                                     # unaryExpr
  | expr op=('*' | '/' | '%') expr                            # binaryExpr
  | expr op=('+' | '-') expr                                  # binaryExpr
  | expr op=('<' | '<=' | '>' | '>=' | '==' | '!=') expr      # binaryExpr
  | expr op='in' expr                                         # binaryExpr
  | expr 'is' negated='not'? 'set'                            # isSetExpr
  | expr op='and' expr                                        # binaryExpr
  | expr op='or' expr                                         # binaryExpr
  | <assoc = right> expr op='implies' expr                    # binaryExpr
  | primary                                                   # primaryExpr
  ;

primary
  : literal                                  # literalPrimary
  | typeName=ident block                        # recordPrimary
  | callee=ident '(' (expr (',' expr)*)? ')'    # callPrimary
  | path                                     # pathPrimary
  | '[' (expr (',' expr)* ','?)? ']'         # listPrimary
  | '{' (mapEntry (',' mapEntry)* ','?)? '}' # mapPrimary
  | '(' expr ')'                             # parenPrimary
  ;

mapEntry : (key=STRING | name=ident) ':' expr ;

literal : INT | FLOAT | STRING | DURATION | BYTES | 'true' | 'false' | 'none' ;

// ---- lexer --------------------------------------------------------------------------------

DURATION : DIGITS ('ms' | 's' | 'm' | 'h') ;
BYTES    : DIGITS ('B' | 'KB' | 'MB' | 'GB' | 'TB' | 'KiB' | 'MiB' | 'GiB' | 'TiB') ;
FLOAT    : DIGITS '.' DIGITS EXPONENT? | DIGITS EXPONENT ;
INT      : DIGITS ;
// A number run into letters (`10Gb`, `5sec`): one token, so the error names all of it.
BAD_NUMBER : DIGITS [a-zA-Z_] [a-zA-Z_0-9]* ;
STRING   : '"' (~["\\\r\n] | '\\' .)* '"' ;
// A string cut off by the end of the line or file; the parser reports it as A1007.
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '\\'? ;
ID       : [a-zA-Z_] [a-zA-Z0-9_]* ;

// Doc comments go to their own channel: allowed anywhere a comment is, and collected by the
// tree builder for the declaration that follows them. Other comments stay in the token stream
// on the hidden channel, which the parser never sees, so that `accelc fmt` can keep them.
DOC_COMMENT  : '///' ~[\r\n]* -> channel(2) ;
LINE_COMMENT : '//' ~[\r\n]* -> channel(HIDDEN) ;
BLOCK_COMMENT: '/*' .*? '*/' -> channel(HIDDEN) ;
WS           : [ \t\r\n]+ -> skip ;
// Anything else becomes one token the parser rejects with a located diagnostic.
UNEXPECTED   : . ;

fragment DIGITS   : [0-9] ('_'? [0-9])* ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;
